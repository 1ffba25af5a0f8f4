"""The fleet's recent past, kept in memory for the dashboard's history plots.

The hub keeps no database, so the plots of the last hours come from rings of samples taken
every `interval_seconds` (10 s) for `capacity` samples (2,160: six hours): per ClusterQueue
the pending and admitted Workloads its status counts, and per MultiKueue worker the mean
dispatch latency (quota reserved on the manager → admitted on the worker, the hub's
`fleetq_multikueue_dispatch_latency_seconds` histogram) of the dispatches that completed
in each interval.

Memory is bounded whatever the fleet does: every series is one float32 column of
`capacity` slots beside one float64 column of sample times, and there are at most
`max_series` columns (a ClusterQueue takes two, a worker one); a series first seen when
the table is full is not recorded (`dropped` counts them), and a series not seen for a
whole ring (its ClusterQueue deleted) is forgotten. So the bound is
`capacity * (8 + 4 * max_series)` bytes: 8.7 MB at the defaults, about 0.45 MB for 20
ClusterQueues and 10 workers (`memory_bytes()` says what is held now).
"""

from __future__ import annotations

import array
import asyncio
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from core.api.json_types import Json
from hub.multikueue.dispatch.dispatch_metrics import DISPATCH_LATENCY

SAMPLE_INTERVAL_SECONDS = 10.0
HISTORY_SAMPLES = 2160
"""Six hours at one sample every 10 s."""
MAX_SERIES = 1000
_TIME_BYTES, _VALUE_BYTES = 8, 4
_log = structlog.get_logger("hub.dashboard.history")

Series = tuple[str, str]
"""(what, of whom): ("pending" | "admitted", ClusterQueue) or ("latency", worker)."""


def memory_bound(capacity: int = HISTORY_SAMPLES, max_series: int = MAX_SERIES) -> int:
    """The most bytes of samples a `FleetHistory` of this size ever holds."""
    return capacity * (_TIME_BYTES + _VALUE_BYTES * max_series)


@dataclass(frozen=True, slots=True)
class Sample:
    """One instant of the fleet: queue counts per ClusterQueue, latency per worker."""

    at: float
    """Seconds since the epoch."""
    queues: Mapping[str, tuple[int, int]]
    """ClusterQueue → (pending, admitted)."""
    latency: Mapping[str, float]
    """Worker → mean dispatch latency in seconds over the interval (absent: no dispatch)."""


class FleetHistory:
    """Rings of samples, oldest overwritten first (see module docstring)."""

    def __init__(
        self,
        capacity: int = HISTORY_SAMPLES,
        *,
        max_series: int = MAX_SERIES,
        interval_seconds: float = SAMPLE_INTERVAL_SECONDS,
    ) -> None:
        self.capacity = capacity
        self.max_series = max_series
        self.interval_seconds = interval_seconds
        self.dropped = 0
        """Series not recorded because `max_series` were already held."""
        self._times = array.array("d", [math.nan]) * capacity
        self._columns: dict[Series, array.array[float]] = {}
        self._last_seen: dict[Series, int] = {}
        self._recorded = 0
        self._view: tuple[int, dict[str, Any]] | None = None

    def __len__(self) -> int:
        """How many samples are held (at most `capacity`)."""
        return min(self._recorded, self.capacity)

    def memory_bytes(self) -> int:
        columns = sum(len(c) * c.itemsize for c in self._columns.values())
        return len(self._times) * self._times.itemsize + columns

    def series(self) -> list[Series]:
        return sorted(self._columns)

    def record(self, sample: Sample) -> None:
        slot = self._recorded % self.capacity
        self._times[slot] = sample.at
        values: dict[Series, float] = {}
        for queue, (pending, admitted) in sample.queues.items():
            values[("pending", queue)] = float(pending)
            values[("admitted", queue)] = float(admitted)
        for worker, seconds in sample.latency.items():
            values[("latency", worker)] = seconds
        for key, value in values.items():
            column = self._columns.get(key)
            if column is None:
                if len(self._columns) >= self.max_series:
                    self.dropped += 1
                    continue
                column = self._columns[key] = array.array("f", [math.nan]) * self.capacity
            column[slot] = value
            self._last_seen[key] = self._recorded
        for key, column in list(self._columns.items()):
            if key in values:
                continue
            column[slot] = math.nan
            if self._recorded - self._last_seen[key] >= self.capacity:
                del self._columns[key], self._last_seen[key]  # gone for a whole ring
        self._recorded += 1

    def _order(self) -> Iterable[int]:
        """Slots oldest first."""
        if self._recorded <= self.capacity:
            return range(self._recorded)
        start = self._recorded % self.capacity
        return [*range(start, self.capacity), *range(start)]

    def view(self) -> dict[str, Any]:
        """Times and values oldest first (None where a series has no sample); rebuilt
        only after a new sample."""
        if self._view is not None and self._view[0] == self._recorded:
            return self._view[1]
        order = list(self._order())

        def values(key: Series, digits: int) -> list[float | None]:
            column = self._columns[key]
            out: list[float | None] = []
            for slot in order:
                value = column[slot]
                out.append(None if math.isnan(value) else round(value, digits))
            return out

        queues = sorted({name for what, name in self._columns if what != "latency"})
        workers = sorted(name for what, name in self._columns if what == "latency")
        body = {
            "intervalSeconds": self.interval_seconds,
            "capacity": self.capacity,
            "times": [self._times[slot] for slot in order],
            "clusterQueues": [
                {
                    "name": name,
                    "pending": values(("pending", name), 0)
                    if ("pending", name) in self._columns
                    else [None] * len(order),
                    "admitted": values(("admitted", name), 0)
                    if ("admitted", name) in self._columns
                    else [None] * len(order),
                }
                for name in queues
            ],
            "dispatchLatency": [
                {"worker": name, "seconds": values(("latency", name), 3)} for name in workers
            ],
            "droppedSeries": self.dropped,
        }
        self._view = (self._recorded, body)
        return body


def queue_counts(cluster_queues: Sequence[Json]) -> dict[str, tuple[int, int]]:
    """ClusterQueue → (pending, admitted), as the ClusterQueues' statuses count them."""
    out: dict[str, tuple[int, int]] = {}
    for cq in cluster_queues:
        name = str((cq.get("metadata") or {}).get("name") or "")
        status = cq.get("status") or {}
        if name:
            out[name] = (
                int(status.get("pendingWorkloads") or 0),
                int(status.get("admittedWorkloads") or 0),
            )
    return out


class DispatchLatency:
    """Mean dispatch latency per worker since the last call, from the hub's histogram.

    The histogram's `_sum` and `_count` only grow, so the mean over an interval is the
    growth of the sum over the growth of the count; a worker with no new dispatch has no
    value for the interval. A follower (no dispatch) or a hub without MultiKueue reads
    nothing.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry.restricted_registry(
            [f"{DISPATCH_LATENCY}_sum", f"{DISPATCH_LATENCY}_count"]
        )
        self._last: dict[str, tuple[float, float]] = {}

    def totals(self) -> dict[str, tuple[float, float]]:
        """Worker → (sum of seconds, count) so far, over every replica role."""
        out: dict[str, list[float]] = {}
        for family in self._registry.collect():
            for sample in family.samples:
                worker = sample.labels.get("cluster", "")
                entry = out.setdefault(worker, [0.0, 0.0])
                entry[0 if sample.name.endswith("_sum") else 1] += sample.value
        return {worker: (total, count) for worker, (total, count) in out.items()}

    def since_last(self) -> dict[str, float]:
        now = self.totals()
        means: dict[str, float] = {}
        for worker, (total, count) in now.items():
            before_total, before_count = self._last.get(worker, (0.0, 0.0))
            if count > before_count:
                means[worker] = max(0.0, (total - before_total) / (count - before_count))
        self._last = now
        return means


class HistorySampler:
    """Takes one `Sample` every `history.interval_seconds` until cancelled."""

    def __init__(
        self,
        history: FleetHistory,
        cluster_queues: Callable[[], Sequence[Json]],
        latency: DispatchLatency | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.history = history
        self._cluster_queues = cluster_queues
        self._latency = latency
        self._clock = clock

    def sample_now(self) -> None:
        latency = self._latency.since_last() if self._latency is not None else {}
        self.history.record(
            Sample(at=self._clock(), queues=queue_counts(self._cluster_queues()), latency=latency)
        )

    async def run(self) -> None:
        while True:
            try:
                self.sample_now()
            except Exception:  # a bad object must not end the plots
                _log.exception("dashboard.history_sample_failed")
            await asyncio.sleep(self.history.interval_seconds)
