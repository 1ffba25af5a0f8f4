"""What the dashboard reads: the hub's caches, its engine and its worker connections.

`DashboardSource` is the narrow face the views need; `HubSource` implements it over a
running hub (informer caches, the engine's queue positions, the MultiKueue worker
registry, which exists on the leader only). Tests implement it over plain lists.

`HubSource.version(inputs)` says cheaply whether any of a view's inputs changed: a count
of each cache's events (one handler per cache adds one to it) and, for the workers, the
connections' states and their reports' resourceVersions. Queue positions are the engine's
and move only on Workload or queue events, which the counts already see. Views rebuild
only when it moves (`streams.SharedViews`), instead of every half second per stream.

`HubSource.changes` wakes the streams when it may have moved: every counted event, and a
change of the workers' part, which has no events of its own and is sampled
(`change_signal.ChangeSignal`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from core.api.json_types import Json
from core.api.worker_capacity import WorkerCapacity
from core.engine.engine import Engine
from core.kube.informer import EventHandlers
from core.manager.informer_set import Cache
from hub.dashboard.change_signal import ChangeSignal
from hub.multikueue.connections.worker_connection import WorkerConnection
from hub.multikueue.dispatch.capacity_view import pick_report


@dataclass(frozen=True, slots=True)
class WorkerSummary:
    """One MultiKueue worker as the hub's connection to it sees it."""

    name: str
    connected: bool
    phase: str
    reason: str
    since: datetime | None
    report: WorkerCapacity | None


class ViewInput(enum.StrEnum):
    """One kind of thing a view reads (`DashboardSource`'s methods, by what they return)."""

    CLUSTER_QUEUES = "clusterQueues"
    LOCAL_QUEUES = "localQueues"
    COHORTS = "cohorts"
    RESOURCE_FLAVORS = "resourceFlavors"
    WORKLOADS = "workloads"
    """The Workloads, and the engine's queue positions, which only their events move."""
    WORKERS = "workers"


class Notifying(Protocol):
    """What `ChangeCount` needs of a cache: to be told of its changes."""

    def add_handlers(self, handlers: EventHandlers[Any]) -> None: ...


class ChangeCount:
    """How many events one cache has seen: equal counts, nothing changed in between.
    `on_change` is called after each one (a `ChangeSignal.changed`)."""

    def __init__(self, cache: Notifying, on_change: Callable[[], None] | None = None) -> None:
        self.count = 0
        self._on_change = on_change
        cache.add_handlers(
            EventHandlers(on_add=self._bump, on_update=self._bump_update, on_delete=self._bump)
        )

    def _bump(self, _obj: Any) -> None:
        self.count += 1
        if self._on_change is not None:
            self._on_change()

    def _bump_update(self, _old: Any, _new: Any) -> None:
        self._bump(_new)


class DashboardSource(Protocol):
    def cluster_queues(self) -> Sequence[Json]: ...
    def local_queues(self) -> Sequence[Json]: ...
    def cohorts(self) -> Sequence[Json]: ...
    def resource_flavors(self) -> Sequence[Json]: ...
    def workloads(self) -> Sequence[Json]: ...
    def workload(self, namespace: str, name: str) -> Json | None:
        """The Workload namespace/name, or None."""
        ...

    def workload_priority_classes(self) -> dict[str, int]:
        """WorkloadPriorityClass name → value."""
        ...

    def workers(self) -> list[WorkerSummary] | None:
        """None when this replica holds no worker connections (not the leader)."""
        ...

    def queue_positions(self) -> dict[str, int]:
        """Workload key → its position in its ClusterQueue (pending ones only)."""
        ...


class HubSource:
    """`DashboardSource` over a hub's informers, engine and (when leading) workers."""

    def __init__(
        self,
        *,
        cluster_queues: Cache,
        local_queues: Cache,
        cohorts: Cache,
        resource_flavors: Cache,
        workloads: Cache,
        workload_priority_values: Mapping[str, int],
        engine: Engine,
        workers: Callable[[], list[WorkerSummary] | None],
    ) -> None:
        self._cqs = cluster_queues
        self._lqs = local_queues
        self._cohorts = cohorts
        self._flavors = resource_flavors
        self._workloads = workloads
        self._priority_values = workload_priority_values
        self._engine = engine
        self._workers = workers
        self.changes = ChangeSignal(self._workers_version)
        """Woken on every change `version` can see (see module docstring)."""
        changed = self.changes.changed
        self._counts = {
            ViewInput.CLUSTER_QUEUES: ChangeCount(cluster_queues, changed),
            ViewInput.LOCAL_QUEUES: ChangeCount(local_queues, changed),
            ViewInput.COHORTS: ChangeCount(cohorts, changed),
            ViewInput.RESOURCE_FLAVORS: ChangeCount(resource_flavors, changed),
            ViewInput.WORKLOADS: ChangeCount(workloads, changed),
        }

    def version(self, inputs: Iterable[ViewInput]) -> tuple[Hashable, ...]:
        """Changes whenever one of `inputs` changed (see module docstring)."""
        return tuple(
            self._workers_version() if which is ViewInput.WORKERS else self._counts[which].count
            for which in inputs
        )

    def _workers_version(self) -> Hashable:
        workers = self._workers()
        if workers is None:
            return None
        return tuple(
            (
                w.name,
                w.connected,
                w.phase,
                w.reason,
                w.since,
                None if w.report is None else w.report.metadata.resource_version,
            )
            for w in workers
        )

    def cluster_queues(self) -> Sequence[Json]:
        return self._cqs.store.list()

    def local_queues(self) -> Sequence[Json]:
        return self._lqs.store.list()

    def cohorts(self) -> Sequence[Json]:
        return self._cohorts.store.list()

    def resource_flavors(self) -> Sequence[Json]:
        return self._flavors.store.list()

    def workloads(self) -> Sequence[Json]:
        return self._workloads.store.list()

    def workload(self, namespace: str, name: str) -> Json | None:
        found: Json | None = self._workloads.store.get_by_name(name, namespace)
        return found

    def workload_priority_classes(self) -> dict[str, int]:
        return dict(self._priority_values)

    def workers(self) -> list[WorkerSummary] | None:
        return self._workers()

    def queue_positions(self) -> dict[str, int]:
        return self._engine.queue_positions()


def worker_summaries(connections: Iterable[WorkerConnection]) -> list[WorkerSummary]:
    """What the fleet view shows of each worker connection and its capacity report."""
    out = []
    for connection in connections:
        state = connection.state
        caches = connection.caches
        report = None if caches is None else pick_report(caches.capacity_reports(), connection.name)
        out.append(
            WorkerSummary(
                name=connection.name,
                connected=connection.connected,
                phase=state.phase.value,
                reason=state.last_error,
                since=state.connected_since if connection.connected else state.disconnected_since,
                report=report,
            )
        )
    return sorted(out, key=lambda w: w.name)
