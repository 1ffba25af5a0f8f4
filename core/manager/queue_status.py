"""ClusterQueue, LocalQueue and Cohort status from the engine, written only when it changed.

Workload changes mark their ClusterQueue dirty (cluster-object changes mark all), and with
it the cohorts above it (only their figures can move: `cohorts_above`); the writer wakes at
most once per `interval_seconds`, renders each dirty queue's status
(counts, flavorsReservation/flavorsUsage, the `Active` condition with its reason,
fairSharing.weightedShare when fair sharing is on) and sends a status patch only where
that differs from the cached object, so bursts of admissions cost one write per queue per
interval and a quiet system writes nothing. Conditions keep their lastTransitionTime
while their status holds (Kubernetes' SetStatusCondition). A ClusterQueue being deleted
but held by its resource-in-use finalizer (workloads still reserve quota in it) keeps
getting its status, as upstream's clusterqueue_controller does: counters go on, and
`Active` turns False with reason `Terminating` (the engine admits nothing more there).
The per-queue Prometheus gauges are refreshed in the same pass.

A Cohort whose parent chain loops (two Cohorts naming each other, or one naming itself)
disables every ClusterQueue below it; they say so in their `Active` condition. The Cohort
itself has no conditions in v1beta2 (upstream only returns "cohort has a cycle" from its
reconciler, into its log), so the writer records one Warning Event `CohortHasCycle` on
each Cohort as it enters a cycle, naming the loop and what to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import structlog

from core.adapters.kueue_manifests import (
    cluster_queue_status_to_dict,
    cohort_status_to_dict,
    local_queue_status_to_dict,
)
from core.api.cluster_queue import QueueActiveReason
from core.api.json_types import Json
from core.kube.client import KubeClient, PatchType
from core.kube.errors import KubeError, NotFound
from core.kube.events import EventRecorder, EventType
from core.kube.object_meta import name_of, namespace_of, object_key
from core.kube.object_store import ObjectStore
from core.kube.resources import ResourceRef
from core.manager import watched_kinds as kinds
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason, reference
from core.manager.field_manager import FIELD_MANAGER
from core.manager.finalizers import is_deleting
from core.manager.metrics import (
    ClusterQueueResources,
    CohortFigures,
    LocalQueueFigures,
    ManagerMetrics,
    QueueFigures,
    ResourceQuota,
)
from core.manager.workload_decisions import condition_of

Store = ObjectStore[dict[str, Any]]
LOCAL_QUEUE_BY_CLUSTER_QUEUE = "clusterQueue"
DEFAULT_INTERVAL_SECONDS = 1.0
_CONDITION_FIELDS = ("status", "reason", "message", "observedGeneration")


def local_queue_cluster_queue_index(obj: Json) -> Iterable[str]:
    """Index LocalQueues by the ClusterQueue they point at."""
    name = (obj.get("spec") or {}).get("clusterQueue")
    return (str(name),) if name else ()


def merge_conditions(current: Json, wanted: list[dict[str, Any]], generation: Any) -> list[Any]:
    """`wanted` conditions, keeping each one's transition time while its status holds, and
    the conditions of types it does not render: another controller's (MultiKueue quota
    automation's on a ClusterQueue), which a status patch of the whole list would drop."""
    rendered = {str(condition["type"]) for condition in wanted}
    out: list[Any] = [
        c
        for c in current.get("conditions") or ()
        if isinstance(c, Mapping) and str(c.get("type")) not in rendered
    ]
    for condition in wanted:
        merged = dict(condition)
        if generation:
            merged["observedGeneration"] = generation
        old = condition_of(current, str(condition["type"]))
        if old is not None and old.get("status") == condition["status"]:
            merged["lastTransitionTime"] = old.get("lastTransitionTime")
        out.append(merged)
    return out


def _conditions_key(conditions: Any) -> dict[str, tuple[Any, ...]]:
    return {
        str(c.get("type")): tuple(c.get(f) for f in _CONDITION_FIELDS)
        for c in conditions or ()
        if isinstance(c, Mapping)
    }


def queue_status_patch(current: Json, wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields of `wanted` that differ from `current` (None values delete)."""
    patch: dict[str, Any] = {}
    for name, value in wanted.items():
        have = current.get(name)
        if name == "conditions":
            if _conditions_key(have) != _conditions_key(value):
                patch[name] = value
        elif have != value and not (have in (None, [], {}) and value in (None, [], {})):
            patch[name] = value
    return patch or None


def cohorts_above(
    cluster_queues: Iterable[str],
    cohort_of: Callable[[str], str],
    lineage: Callable[[str], list[str]],
) -> set[str]:
    """The cohorts whose figures a change in these ClusterQueues can move: each one's
    cohort and that cohort's ancestors (`lineage`). A cohort's share and totals come from
    its own subtree and its parent's quota, which only a cluster-object change moves."""
    out: set[str] = set()
    for name in cluster_queues:
        parent = cohort_of(name)
        if parent and parent not in out:
            out.update(lineage(parent))
    return out


class QueueStatusWriter:
    """Coalesced status writes for queues (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        host: EngineHost,
        *,
        cluster_queues: Store,
        local_queues: Store,
        cohorts: Store,
        fair_sharing: bool,
        metrics: ManagerMetrics | None = None,
        events: EventRecorder | None = None,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        concurrency: int = 8,
    ) -> None:
        self.client = client
        self.host = host
        self.cluster_queues = cluster_queues
        self.local_queues = local_queues
        self.cohorts = cohorts
        self.fair_sharing = fair_sharing
        self.metrics = metrics
        self.events = events
        # Cohorts last seen in a parent cycle (told once per entry into the cycle).
        self._in_cycle: set[str] = set()
        self.interval_seconds = interval_seconds
        self._limit = asyncio.Semaphore(concurrency)
        self._dirty: set[str] = set()
        self._all = True
        self._signal = asyncio.Event()
        self._signal.set()
        self._gauged: dict[str, tuple[str, str]] = {}
        self.writes = 0
        self.log = structlog.get_logger("core.manager.queue_status")
        host.add_listener(self)

    # -- EngineListener ------------------------------------------------------------------
    def workloads_changed(self, keys: Collection[str]) -> None:
        return None

    def queues_touched(self, cluster_queues: Collection[str] | None) -> None:
        if cluster_queues is None:
            self._all = True
        else:
            self._dirty.update(cluster_queues)
        self._signal.set()

    # -- running -------------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._signal.wait()
            self._signal.clear()
            started = loop.time()
            await self.flush()
            await asyncio.sleep(max(0.0, self.interval_seconds - (loop.time() - started)))

    async def flush(self) -> None:
        """Write every dirty queue's status that changed; failures are retried next time."""
        everything, dirty = self._all, self._dirty
        self._all, self._dirty = False, set()
        names = sorted(self.cluster_queues.keys()) if everything else sorted(dirty)
        writes: list[tuple[ResourceRef, Json, dict[str, Any], str]] = []
        for name in names:
            cq = self.cluster_queues.get(name)
            if cq is None:
                continue
            wanted = self._cluster_queue_status(cq)
            if wanted is not None:
                writes.append((kinds.CLUSTER_QUEUES, cq, wanted, name))
            for lq in self.local_queues.by_index(LOCAL_QUEUE_BY_CLUSTER_QUEUE, name):
                wanted = self._local_queue_status(lq)
                if wanted is not None:
                    writes.append((kinds.LOCAL_QUEUES, lq, wanted, name))
        if everything:
            for lq in self.local_queues:
                # LocalQueues pointing at a ClusterQueue that does not exist.
                if (lq.get("spec") or {}).get("clusterQueue") not in self.cluster_queues:
                    wanted = self._local_queue_status(lq)
                    if wanted is not None:
                        writes.append((kinds.LOCAL_QUEUES, lq, wanted, ""))
        if everything:
            self._tell_cohort_cycles()
        cohorts = None if everything else self._cohorts_above(names)
        for cohort in self.cohorts if cohorts is None else self._cohort_objects(cohorts):
            wanted = self._cohort_status(cohort)
            if wanted is not None:
                writes.append((kinds.COHORTS, cohort, wanted, ""))
        self._refresh_gauges(names, everything, cohorts)
        await asyncio.gather(*(self._write(*w) for w in writes))

    async def _write(
        self, resource: ResourceRef, obj: Json, patch: dict[str, Any], cluster_queue: str
    ) -> None:
        async with self._limit:
            try:
                await self.client.patch(
                    resource,
                    name_of(obj),
                    {"status": patch},
                    patch_type=PatchType.MERGE,
                    namespace=namespace_of(obj) or None,
                    subresource="status",
                    field_manager=FIELD_MANAGER,
                )
                self.writes += 1
            except NotFound:
                return
            except KubeError as error:
                self.log.warning(
                    "queue.status_write_failed", queue=object_key(obj), error=str(error)
                )
                if cluster_queue:
                    self.queues_touched((cluster_queue,))
                else:
                    self.queues_touched(None)

    def _cohorts_above(self, cluster_queues: Iterable[str]) -> set[str]:
        def cohort_of(name: str) -> str:
            cq = self.cluster_queues.get(name)
            return str(((cq or {}).get("spec") or {}).get("cohortName") or "")

        return cohorts_above(cluster_queues, cohort_of, self._lineage)

    def _cohort_objects(self, names: Iterable[str]) -> list[Json]:
        return [c for c in (self.cohorts.get(n) for n in sorted(names)) if c is not None]

    # -- rendering -----------------------------------------------------------------------
    def _conditions(self, obj: Json, rendered: Mapping[str, Any]) -> list[Any]:
        current = obj.get("status") or {}
        generation = (obj.get("metadata") or {}).get("generation")
        return merge_conditions(current, list(rendered.get("conditions") or ()), generation)

    def _cluster_queue_status(self, cq: Json) -> dict[str, Any] | None:
        status = self.host.engine.cluster_queue_status(name_of(cq))
        if status is None:
            return None
        rendered = cluster_queue_status_to_dict(status)
        rendered["conditions"] = self._conditions(cq, rendered)
        if not self.fair_sharing:
            rendered["fairSharing"] = None
        return queue_status_patch(cq.get("status") or {}, rendered)

    def _local_queue_status(self, lq: Json) -> dict[str, Any] | None:
        status = self.host.engine.local_queue_status(namespace_of(lq), name_of(lq))
        if status is None:
            return None
        rendered = local_queue_status_to_dict(status)
        rendered["conditions"] = self._conditions(lq, rendered)
        return queue_status_patch(lq.get("status") or {}, rendered)

    def _cohort_status(self, cohort: Json) -> dict[str, Any] | None:
        rendered: dict[str, Any] = {"fairSharing": None}
        if self.fair_sharing:
            status = self.host.engine.cohort_status(name_of(cohort))
            if status is None:
                return None
            rendered = {"fairSharing": cohort_status_to_dict(status)["fairSharing"]}
        return queue_status_patch(cohort.get("status") or {}, rendered)

    def _tell_cohort_cycles(self) -> None:
        """A Warning Event on each Cohort that entered a parent cycle since last time."""
        in_cycle: set[str] = set()
        for cohort in self.cohorts:
            name = name_of(cohort)
            status = self.host.engine.cohort_status(name)
            cycle = next(
                (
                    c
                    for c in (status.conditions if status is not None else ())
                    if c.reason == QueueActiveReason.COHORT_HAS_CYCLE.value
                ),
                None,
            )
            if cycle is None:
                continue
            in_cycle.add(name)
            if name in self._in_cycle:
                continue
            self.log.warning("cohort.cycle", cohort=name, cycle=cycle.message)
            if self.events is not None:
                self.events.record(
                    reference(cohort, kinds.COHORTS, "Cohort"),
                    EventReason.COHORT_HAS_CYCLE,
                    f"{cycle.message}; the ClusterQueues below it admit no workloads until "
                    "a parentName in the loop is changed or removed",
                    type=EventType.WARNING,
                )
        self._in_cycle = in_cycle

    # -- metrics -------------------------------------------------------------------------
    def _root_cohort(self, name: str) -> str:
        lineage = self._lineage(name)
        return lineage[-1] if lineage else name

    def _lineage(self, name: str) -> list[str]:
        """`name` and the cohorts above it, up to the root (a cycle stops where it closes)."""
        out: list[str] = []
        while name and name not in out:
            out.append(name)
            cohort = self.cohorts.get(name)
            parent = ((cohort or {}).get("spec") or {}).get("parentName") if cohort else None
            if not parent:
                break
            name = str(parent)
        return out

    def _refresh_cohort_gauges(self, metrics: ManagerMetrics, only: set[str] | None) -> None:
        """Every cohort's gauges (`only` None), or just those named."""
        engine = self.host.engine
        names = set(engine.cohort_names())
        if only is None:
            for gone in [n for n in metrics.cohorts() if n not in names]:
                metrics.forget_cohort(gone)
        else:
            names &= only
        for name in sorted(names):
            figures = engine.cohort_figures(name)
            status = engine.cohort_status(name)
            if figures is None or status is None:
                continue
            cohort = self.cohorts.get(name)
            parent = str((((cohort or {}).get("spec") or {}).get("parentName")) or "")
            metrics.set_cohort(
                name,
                CohortFigures(
                    parent=parent,
                    root=self._root_cohort(name),
                    weighted_share=status.weighted_share,
                    subtree_quota=figures.subtree_quota,
                    reservations=figures.reservations,
                    admitted_active=figures.admitted_workloads,
                ),
            )

    def _refresh_gauges(self, names: list[str], everything: bool, cohorts: set[str] | None) -> None:
        metrics = self.metrics
        if metrics is None:
            return
        engine = self.host.engine
        if everything:
            for gone in [n for n in self._gauged if n not in self.cluster_queues]:
                metrics.forget_cluster_queue(gone, (self._gauged.pop(gone),))
        self._refresh_cohort_gauges(metrics, cohorts)
        for name in names:
            cq = self.cluster_queues.get(name)
            status = engine.cluster_queue_status(name)
            if cq is None or status is None:
                continue
            parent = str((cq.get("spec") or {}).get("cohortName") or "")
            lineage = (parent, self._root_cohort(parent))
            previous = self._gauged.get(name)
            if previous is not None and previous != lineage:
                metrics.forget_cluster_queue(name, (previous,))
            self._gauged[name] = lineage
            queued, inadmissible = engine.pending_counts(name)
            active = status.conditions and status.conditions[0].status
            state = "terminating" if is_deleting(cq) else ("active" if active else "pending")
            metrics.set_cluster_queue(
                name,
                QueueFigures(
                    active_pending=queued,
                    inadmissible_pending=inadmissible,
                    reserving=status.reserving_workloads,
                    admitted=status.admitted_workloads,
                ),
                state,
                *lineage,
                cohort_ancestors=self._lineage(parent),
                resources=ClusterQueueResources(
                    cohort=parent,
                    quotas={
                        fr: ResourceQuota(q.nominal, q.borrowing_limit, q.lending_limit)
                        for fr, q in engine.cluster_queue_quotas(name).items()
                    },
                    reservation={
                        (f.flavor, f.resource): f.total for f in status.flavors_reservation
                    },
                    usage={(f.flavor, f.resource): f.total for f in status.flavors_usage},
                    weighted_share=status.weighted_share,
                ),
            )
            self._gauge_local_queues(name)

    def _gauge_local_queues(self, cluster_queue: str) -> None:
        assert self.metrics is not None
        engine = self.host.engine
        for lq in self.local_queues.by_index(LOCAL_QUEUE_BY_CLUSTER_QUEUE, cluster_queue):
            namespace, name = namespace_of(lq), name_of(lq)
            status = engine.local_queue_status(namespace, name)
            if status is None:
                continue
            stuck = engine.local_queue_inadmissible_count(namespace, name)
            active = status.conditions[0].status if status.conditions else None
            self.metrics.set_local_queue(
                namespace,
                name,
                LocalQueueFigures(
                    QueueFigures(
                        active_pending=max(0, status.pending_workloads - stuck),
                        inadmissible_pending=stuck,
                        reserving=status.reserving_workloads,
                        admitted=status.admitted_workloads,
                    ),
                    active="Unknown" if active is None else ("True" if active else "False"),
                    reservation={
                        (f.flavor, f.resource): f.total for f in status.flavors_reservation
                    },
                    usage={(f.flavor, f.resource): f.total for f in status.flavors_usage},
                ),
            )
