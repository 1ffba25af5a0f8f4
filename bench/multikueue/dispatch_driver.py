"""The load: Jobs submitted to the manager at a fixed rate, timed until a worker runs them.

One Job is "dispatched" when its copy on some worker has `spec.suspend: false`: the
manager admitted it, a worker admitted the remote Workload and the worker's Kueue let the
Job start. The driver times that from the moment the manager's apiserver answered the
create, with one clock (this process) for both ends, by watching the Jobs on every worker.
Lite workers run no pods, so the measure ends exactly there, as the brief asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.multikueue.queue_setup import QueueSetup
from core.api.json_types import JsonDict
from core.engine.nearest_rank import nearest_rank
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, TransportError
from core.kube.informer import EventHandlers, Informer
from core.kube.resources import JOBS

DRIVER_QPS = 5000.0
"""The driver must never be what limits the run."""
MAX_CREATES_IN_FLIGHT = 32
"""A burst is sent as fast as the apiserver takes it, not as hundreds of connections."""
CREATE_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Phase:
    """`jobs` Jobs at `rate` per second (0: all at once)."""

    name: str
    rate: float
    jobs: int


@dataclass(frozen=True, slots=True)
class PhaseResult:
    name: str
    rate: float
    jobs: int
    dispatched: int
    submit_seconds: float
    """From the first create sent to the last create answered."""
    span_seconds: float
    """From the first create sent to the last Job unsuspended on a worker."""
    latencies: tuple[float, ...]
    started_at: dt.datetime
    ended_at: dt.datetime
    dispatched_names: frozenset[str] = frozenset()
    per_worker: tuple[int, ...] = ()
    """Jobs dispatched to each worker, in the workers' order."""

    @property
    def throughput(self) -> float:
        """Dispatched Jobs per second over the whole span."""
        return self.dispatched / self.span_seconds if self.span_seconds > 0 else 0.0

    def percentile(self, fraction: float) -> float | None:
        """Nearest-rank percentile of the latencies (None when nothing was dispatched)."""
        return nearest_rank(self.latencies, fraction)

    def summary(self) -> dict[str, Any]:
        p50, p99 = self.percentile(0.5), self.percentile(0.99)
        return {
            "phase": self.name,
            "rate_per_s": self.rate,
            "jobs": self.jobs,
            "dispatched": self.dispatched,
            "submit_s": round(self.submit_seconds, 3),
            "span_s": round(self.span_seconds, 3),
            "throughput_per_s": round(self.throughput, 2),
            "latency_p50_s": None if p50 is None else round(p50, 4),
            "latency_p99_s": None if p99 is None else round(p99, 4),
            "latency_max_s": round(max(self.latencies), 4) if self.latencies else None,
            "dispatched_per_worker": list(self.per_worker),
        }


class _Unsuspensions:
    """When each awaited Job was first seen unsuspended on any worker (monotonic time)."""

    def __init__(self) -> None:
        self.awaited: set[str] = set()
        self.seen: dict[str, float] = {}
        self.where: dict[str, int] = {}
        """Job name → index of the worker it was first seen unsuspended on."""
        self.changed = asyncio.Event()

    def observe(self, job: JsonDict, worker: int) -> None:
        name = (job.get("metadata") or {}).get("name", "")
        unsuspended = (job.get("spec") or {}).get("suspend") is False
        if unsuspended and name in self.awaited and name not in self.seen:
            self.seen[name] = time.monotonic()
            self.where[name] = worker
            self.changed.set()

    def per_worker(self, workers: int) -> tuple[int, ...]:
        counts = [0] * workers
        for index in self.where.values():
            counts[index] += 1
        return tuple(counts)

    def handlers(self, worker: int) -> EventHandlers[JsonDict]:
        return EventHandlers(
            on_add=lambda job: self.observe(job, worker),
            on_update=lambda _old, new: self.observe(new, worker),
            on_delete=None,
        )


async def _create(
    client: KubeClient,
    body: JsonDict,
    namespace: str,
    created: dict[str, float],
    in_flight: asyncio.Semaphore,
) -> None:
    """Create one Job; a busy apiserver that drops the connection gets a few more tries."""
    name = body["metadata"]["name"]
    async with in_flight:
        for attempt in range(CREATE_ATTEMPTS):
            try:
                await client.create(JOBS, body, namespace=namespace)
                break
            except AlreadyExists:
                break  # an earlier attempt got through before its answer was lost
            except TransportError:
                if attempt + 1 == CREATE_ATTEMPTS:
                    raise
                await asyncio.sleep(0.5 * (attempt + 1))
    created[name] = time.monotonic()


async def run_phase(
    manager_kubeconfig: Path,
    worker_kubeconfigs: Sequence[Path],
    setup: QueueSetup,
    phase: Phase,
    *,
    timeout: float,
) -> PhaseResult:
    """Submit the phase's Jobs and wait (up to `timeout` after the last create) for all."""
    manager = await KubeClient.from_kubeconfig(
        manager_kubeconfig, qps=DRIVER_QPS, burst=int(DRIVER_QPS)
    )
    workers = [
        await KubeClient.from_kubeconfig(path, qps=DRIVER_QPS, burst=int(DRIVER_QPS))
        for path in worker_kubeconfigs
    ]
    tracker = _Unsuspensions()
    names = [f"{phase.name}-{index:05d}" for index in range(phase.jobs)]
    tracker.awaited.update(names)
    informers: list[Informer[JsonDict]] = []
    for index, client in enumerate(workers):
        informer: Informer[JsonDict] = Informer(client, JOBS, into=dict, namespace=setup.namespace)
        informer.add_handlers(tracker.handlers(index))
        informers.append(informer)
    created: dict[str, float] = {}
    try:
        async with asyncio.TaskGroup() as group:
            watches = [group.create_task(informer.run()) for informer in informers]
            for informer in informers:
                await informer.wait_synced(timeout_seconds=60)
            started_at = dt.datetime.now(dt.UTC)
            first_sent = time.monotonic()
            creates = []
            in_flight = asyncio.Semaphore(MAX_CREATES_IN_FLIGHT)
            for index, name in enumerate(names):
                if phase.rate > 0:
                    delay = first_sent + index / phase.rate - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                body = setup.job(name)
                creates.append(
                    group.create_task(_create(manager, body, setup.namespace, created, in_flight))
                )
            await asyncio.gather(*creates)
            submitted = time.monotonic()
            deadline = submitted + timeout
            while len(tracker.seen) < len(names) and time.monotonic() < deadline:
                tracker.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tracker.changed.wait(), timeout=1.0)
            ended_at = dt.datetime.now(dt.UTC)
            for watch in watches:
                watch.cancel()
    finally:
        for client in (manager, *workers):
            await client.close()
    latencies = tuple(
        max(0.0, tracker.seen[name] - created[name]) for name in names if name in tracker.seen
    )
    last = max(tracker.seen.values(), default=first_sent)
    return PhaseResult(
        phase.name,
        phase.rate,
        phase.jobs,
        len(tracker.seen),
        submitted - first_sent,
        last - first_sent,
        latencies,
        started_at,
        ended_at,
        frozenset(tracker.seen),
        tracker.per_worker(len(workers)),
    )
