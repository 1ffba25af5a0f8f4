"""The scheduling thread: run engine cycles while they can make progress, then sleep.

It wakes when anything that may allow an admission happened (the engine host's signal)
or when the engine's next timer (requeue backoff, PodsReady timeout, maximum execution
time) is due. Each round fires due timers (`tick`) and runs one cycle (`schedule`); the
statuses they changed go to the status writer, the ClusterQueues they touched to the
queue-status writer. A cycle that admitted or preempted is followed at once by another;
one that did not backs off (1 ms doubling to 100 ms, as upstream backs off to 10 ms) while
heads remain, since a head waiting for its victims to stop or blocking a StrictFIFO queue
is retried; with no head left the loop sleeps until woken.
"""

from __future__ import annotations

import time

import structlog

from core.engine.model import CycleResult
from hub.metrics import HubMetrics
from hub.runtime.engine_host import EngineHost

MIN_BACKOFF_SECONDS = 0.001
MAX_BACKOFF_SECONDS = 0.1


class SchedulerLoop:
    """Drives `Engine.tick` and `Engine.schedule` (see module docstring)."""

    def __init__(self, host: EngineHost, metrics: HubMetrics | None = None) -> None:
        self.host = host
        self.metrics = metrics
        self.cycles = 0
        self.log = structlog.get_logger("hub.runtime.scheduler")

    def _seconds_to_next_timer(self) -> float | None:
        due = self.host.engine.next_timer()
        if due is None:
            return None
        return max(0.0, due - self.host.engine.clock.now())

    async def run(self) -> None:
        backoff: float | None = 0.0  # run once at start: heads may be waiting already
        while True:
            wait = self._seconds_to_next_timer()
            if backoff is not None:
                wait = backoff if wait is None else min(wait, backoff)
            await self.host.wait_for_change(wait)
            result = self.run_once()
            if result.heads == 0 or not self.host.engine.has_queued_work():
                backoff = None
            elif result.admitted or result.preempted:
                backoff = 0.0
            else:
                backoff = min(max(2 * (backoff or 0.0), MIN_BACKOFF_SECONDS), MAX_BACKOFF_SECONDS)

    def run_once(self) -> CycleResult:
        """Fire due timers and run one scheduling cycle; publish what changed."""
        host = self.host
        engine = host.engine
        ticked = engine.tick()
        if ticked:
            host.publish(ticked, wake=False)
        started = time.perf_counter()
        result = engine.schedule()
        elapsed = time.perf_counter() - started
        if result.heads == 0:
            if result.changed:
                host.publish(result.changed, wake=False)
            return result
        self.cycles += 1
        touched = {admitted.admission.cluster_queue for admitted in result.admitted}
        for record in result.preempted:
            touched.add(record.victim_cluster_queue)
            self.log.info(
                "workload.preempted",
                workload=record.victim,
                preemptor=record.preemptor,
                reason=record.reason.value,
            )
            if self.metrics is not None:
                self.metrics.preempted(record.preemptor_cluster_queue, record.reason.value)
        if self.metrics is not None:
            self.metrics.admission_attempt(bool(result.admitted), elapsed)
        for admitted in result.admitted:
            self.log.info(
                "workload.quota_reserved",
                workload=admitted.key,
                cluster_queue=admitted.admission.cluster_queue,
            )
        host.publish(result.changed, touched=touched, wake=False)
        return result
