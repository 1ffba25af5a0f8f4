"""The scheduling thread: run an engine cycle when something may change a verdict, then wait.

It wakes when anything that may allow an admission happened (the engine host's signal:
a workload added, requeued, finished or evicted, a quota, queue, cohort or flavor
change, an admission check state) or when the engine's next timer (requeue backoff,
PodsReady timeout, maximum execution time) is due. Each round fires due timers (`tick`)
and runs one cycle (`schedule`); the statuses they changed go to the status writer, the
ClusterQueues they touched to the queue-status writer.

After a cycle the loop runs another only if it could decide differently: the cycle
admitted or preempted (quota moved, new heads surface), or the next cycle would take
other heads (the ones it tried went back to the inadmissible set). A head that is
blocked - waiting for its victims to stop, or not fitting at the front of a StrictFIFO
queue - is not retried at all: the loop waits for a wake-up, as upstream's queue manager
parks its scheduler on a condition variable. As upstream's scheduler, a cycle without
progress is followed by a short pause (1 ms doubling to `MAX_BACKOFF_SECONDS`, 100 ms as
upstream's `pkg/util/wait.UntilWithBackoff`) before the next, however soon something
wakes it, so a stream of arrivals and finishes into full queues costs at most ten cycles
without progress a second. Whatever happens during the pause is seen by the next cycle.

A round whose heads were all decided before (the engine kept an alike head's verdict and
nothing changed since: `core.engine.verdict_cache`) only requeues them: it evaluated no
verdict, so it is no admission cycle (neither counted nor in `kueue_admission_attempts_total`).
It is paced as a cycle without progress is: unpaced, every flush (each finished workload
sends its cohort's parked heads back) would be followed by a whole drain of the heaps.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from core.engine.model import CycleResult
from core.manager.engine_host import EngineHost
from core.manager.metrics import ManagerMetrics

MIN_BACKOFF_SECONDS = 0.001
MAX_BACKOFF_SECONDS = 0.1


class SchedulerLoop:
    """Drives `Engine.tick` and `Engine.schedule` (see module docstring)."""

    def __init__(self, host: EngineHost, metrics: ManagerMetrics | None = None) -> None:
        self.host = host
        self.metrics = metrics
        self.cycles = 0
        self.requeue_rounds = 0
        """Rounds whose heads all had kept verdicts (see module docstring)."""
        self.log = structlog.get_logger("core.manager.scheduler")

    def _seconds_to_next_timer(self) -> float | None:
        due = self.host.engine.next_timer()
        if due is None:
            return None
        return max(0.0, due - self.host.engine.clock.now())

    async def run(self) -> None:
        again = True  # run once at start: heads may be waiting already
        pace = 0.0
        while True:
            if again:
                await asyncio.sleep(0)  # let informer events and writers in between cycles
            else:
                await self.host.wait_for_change(self._seconds_to_next_timer())
            self.host.consume_wake()  # this cycle sees everything that happened until now
            result = self.run_once()
            again = self.should_run_again(result)
            if result.heads == 0:
                continue  # nothing was tried: nothing to pace
            if result.admitted or result.preempted:
                pace = 0.0
            else:
                pace = min(max(2 * pace, MIN_BACKOFF_SECONDS), MAX_BACKOFF_SECONDS)
                await asyncio.sleep(pace)  # changes meanwhile still wake the next wait

    def should_run_again(self, result: CycleResult) -> bool:
        """Whether a cycle right now could decide differently from `result` (see module)."""
        engine = self.host.engine
        if result.heads == 0 or not engine.has_queued_work():
            return False
        return not engine.would_repeat(result)

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
        if result.evaluated == 0:
            self.requeue_rounds += 1
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
        for replaced, cluster_queue in sorted(result.replaced.items()):
            self.log.info("workload.slice_replaced", workload=replaced, cluster_queue=cluster_queue)
            if self.metrics is not None:
                self.metrics.slice_replaced(cluster_queue)
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
