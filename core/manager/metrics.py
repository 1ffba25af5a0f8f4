"""Prometheus metrics under upstream Kueue's names and labels, so existing dashboards work.

Every upstream v0.19 series is registered with upstream's name and labels (a unit test
reads them from upstream's source); fleetq's own series are named `fleetq_*`. Every series
but `kueue_build_info` carries `replica_role` (leader, follower or standalone) as upstream's
do. The hub records events as they happen (admission attempts, reservations, evictions...)
and refreshes the per-queue gauges from the engine's figures after each change; both go
through this one object so the names are spelled in one place only. Like upstream, the
ClusterQueue resource series are only filled when `metrics.enableClusterQueueResources` is
set, and the LocalQueue series only while the `LocalQueueMetrics` gate is on (its default).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from core.api.quantity import MILLI_RESOURCES

_WAIT_BUCKETS = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
_CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
_CREATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24)

CLUSTER_QUEUE_STATES = ("pending", "active", "terminating")
LOCAL_QUEUE_STATES = ("True", "False", "Unknown")

FlavorResource = tuple[str, str]


def amount(resource: str, value: int) -> float:
    """An engine integer as the float Prometheus reports (cores for cpu, bytes, units)."""
    return value / 1000 if resource in MILLI_RESOURCES else float(value)


@dataclass(frozen=True)
class QueueFigures:
    """A ClusterQueue's or LocalQueue's counts, as the engine reports them."""

    active_pending: int
    inadmissible_pending: int
    reserving: int
    admitted: int


@dataclass(frozen=True)
class ResourceQuota:
    """What a ClusterQueue declares for one (flavor, resource); None limits are unset."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class ClusterQueueResources:
    """The optional per-(flavor, resource) ClusterQueue series, in engine integers."""

    cohort: str
    quotas: Mapping[FlavorResource, ResourceQuota] = field(default_factory=dict)
    reservation: Mapping[FlavorResource, int] = field(default_factory=dict)
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    weighted_share: float = 0.0


@dataclass(frozen=True)
class CohortFigures:
    """One cohort's series: its place in the tree, share and subtree figures."""

    parent: str
    root: str
    weighted_share: float
    subtree_quota: Mapping[FlavorResource, int]
    reservations: Mapping[FlavorResource, int]
    admitted_active: int


@dataclass(frozen=True)
class LocalQueueRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class LocalQueueFigures:
    """A LocalQueue's gauges: counts, Active condition and resources per flavor."""

    counts: QueueFigures
    active: str = "True"
    reservation: Mapping[FlavorResource, int] = field(default_factory=dict)
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)


class ManagerMetrics:
    """All of the hub's metrics, in a registry of their own (tests get a fresh one each)."""

    def __init__(
        self,
        replica_role: str = "standalone",
        version: str = "unknown",
        *,
        cluster_queue_resources: bool = False,
        local_queues: bool = True,
    ) -> None:
        self.registry = CollectorRegistry()
        self.side_registry = CollectorRegistry()
        """Gauges named like a counter without `_total` (upstream's `*_finished_workloads`):
        prometheus_client refuses both in one registry, the scrape serves both."""
        self.replica_role = replica_role
        self.cluster_queue_resources = cluster_queue_resources
        """Fill the optional ClusterQueue resource series (upstream's same setting)."""
        self.local_queues = local_queues
        """Fill the LocalQueue series (upstream's LocalQueueMetrics gate)."""
        self._cohort_ancestors: dict[str, tuple[str, ...]] = {}
        self._cq_resources: dict[str, set[tuple[str, ...]]] = {}
        self._cohort_series: dict[str, set[tuple[str, ...]]] = {}
        self._lq_series: dict[LocalQueueRef, set[tuple[str, ...]]] = {}
        role = ["replica_role"]
        cq = ["cluster_queue", *role]
        cq_pc = ["cluster_queue", "priority_class", *role]
        lq = ["name", "namespace", *role]
        lq_pc = ["name", "namespace", "priority_class", *role]
        cq_res = ["cohort", "cluster_queue", "flavor", "resource", *role]
        lq_res = ["name", "namespace", "flavor", "resource", *role]
        cohort_res = ["cohort", "flavor", "resource", *role]
        evicted = ["cluster_queue", "reason", "underlying_cause", "priority_class", *role]

        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(name, doc, labels, registry=self.registry)

        def gauge(name: str, doc: str, labels: list[str]) -> Gauge:
            return Gauge(name, doc, labels, registry=self.registry)

        def histogram(
            name: str, doc: str, labels: list[str], buckets: tuple[float, ...] = _WAIT_BUCKETS
        ) -> Histogram:
            return Histogram(name, doc, labels, buckets=buckets, registry=self.registry)

        self.build_info = gauge(
            "kueue_build_info",
            "Build information of the running manager",
            ["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
        )
        self.build_info.labels(
            version, "unknown", "unknown", "python", "cpython", "linux/amd64"
        ).set(1)
        # -- the scheduler
        self.admission_attempts = counter(
            "kueue_admission_attempts_total",
            "Scheduling cycles that tried to admit workloads, by result",
            ["result", *role],
        )
        self.admission_attempt_duration = histogram(
            "kueue_admission_attempt_duration_seconds",
            "Duration of a scheduling cycle",
            ["result", *role],
            _CYCLE_BUCKETS,
        )
        self.preemption_skips = gauge(
            "kueue_admission_cycle_preemption_skips",
            "Workloads skipped in the last cycle because their preemption targets overlapped",
            cq,
        )
        # -- ClusterQueue counts
        self.pending_workloads = gauge(
            "kueue_pending_workloads",
            "Pending workloads per ClusterQueue and status",
            ["cluster_queue", "status", *role],
        )
        self.reserving_active = gauge(
            "kueue_reserving_active_workloads", "Workloads holding quota per ClusterQueue", cq
        )
        self.admitted_active = gauge(
            "kueue_admitted_active_workloads",
            "Admitted, unfinished workloads per ClusterQueue",
            cq,
        )
        self.finished_active = Gauge(
            "kueue_finished_workloads",
            "Finished workloads still kept, per ClusterQueue",
            cq,
            registry=self.side_registry,
        )
        self.cluster_queue_status = gauge(
            "kueue_cluster_queue_status",
            "1 for the ClusterQueue's current status, else 0",
            ["cluster_queue", "status", *role],
        )
        self.cluster_queue_info = gauge(
            "kueue_cluster_queue_info",
            "A ClusterQueue's place in the cohort tree",
            ["cluster_queue", "parent_cohort", "root_cohort", *role],
        )
        self.unadmitted = gauge(
            "kueue_unadmitted_workloads",
            "Workloads not admitted per ClusterQueue, by reason",
            ["cluster_queue", "reason", "underlying_cause", *role],
        )
        # -- ClusterQueue events
        self.quota_reserved_total = counter(
            "kueue_quota_reserved_workloads_total", "Workloads that got quota", cq_pc
        )
        self.admitted_total = counter("kueue_admitted_workloads_total", "Workloads admitted", cq_pc)
        self.finished_total = counter("kueue_finished_workloads_total", "Workloads finished", cq_pc)
        self.evicted_total = counter(
            "kueue_evicted_workloads_total", "Workloads evicted, by reason", evicted
        )
        self.evicted_once_total = counter(
            "kueue_evicted_workloads_once_total",
            "Workloads evicted for the first time, by reason",
            evicted,
        )
        self.preempted_total = counter(
            "kueue_preempted_workloads_total",
            "Workloads preempted, by preempting queue",
            ["preempting_cluster_queue", "reason", *role],
        )
        self.replaced_slices_total = counter(
            "kueue_replaced_workload_slices_total",
            "Workload slices replaced by a larger slice of their elastic job",
            cq,
        )
        self.quota_reserved_wait = histogram(
            "kueue_quota_reserved_wait_time_seconds",
            "Creation (or requeue) to quota reserved",
            cq_pc,
        )
        self.admission_wait = histogram(
            "kueue_admission_wait_time_seconds", "Creation (or requeue) to admitted", cq_pc
        )
        self.admission_checks_wait = histogram(
            "kueue_admission_checks_wait_time_seconds", "Quota reserved to admitted", cq_pc
        )
        self.ready_wait = histogram(
            "kueue_ready_wait_time_seconds", "Creation (or requeue) to pods ready", cq_pc
        )
        self.admitted_until_ready_wait = histogram(
            "kueue_admitted_until_ready_wait_time_seconds", "Admitted to pods ready", cq_pc
        )
        self.pods_ready_to_evicted = histogram(
            "kueue_pods_ready_to_evicted_time_seconds",
            "Pods ready to evicted",
            ["cluster_queue", "reason", "underlying_cause", *role],
        )
        self.eviction_latency = histogram(
            "kueue_workload_eviction_latency_seconds",
            "Evicted to quota released",
            ["cluster_queue", "reason", *role],
        )
        # -- the job framework
        self.workload_creation_latency = histogram(
            "kueue_workload_creation_latency_seconds",
            "Job created to its Workload created",
            ["job_kind", *role],
            _CREATION_BUCKETS,
        )
        self.gate_removal = histogram(
            "kueue_pod_scheduling_gate_removal_seconds",
            "Workload admitted to a pod's scheduling gate removed",
            ["name", "cluster_queue", "is_group", *role],
            _CREATION_BUCKETS,
        )
        # -- optional ClusterQueue resources
        self.cq_reservation = gauge(
            "kueue_cluster_queue_resource_reservation",
            "Quota reserved per ClusterQueue, flavor and resource",
            cq_res,
        )
        self.cq_usage = gauge(
            "kueue_cluster_queue_resource_usage",
            "Quota used by admitted workloads per ClusterQueue, flavor and resource",
            cq_res,
        )
        self.cq_pending_resources = gauge(
            "kueue_cluster_queue_resource_pending",
            "Resources requested by pending workloads per ClusterQueue",
            ["cluster_queue", "resource", *role],
        )
        self.cq_nominal = gauge(
            "kueue_cluster_queue_nominal_quota", "Nominal quota per flavor and resource", cq_res
        )
        self.cq_borrowing_limit = gauge(
            "kueue_cluster_queue_borrowing_limit", "Borrowing limit per flavor and resource", cq_res
        )
        self.cq_lending_limit = gauge(
            "kueue_cluster_queue_lending_limit", "Lending limit per flavor and resource", cq_res
        )
        self.cq_weighted_share = gauge(
            "kueue_cluster_queue_weighted_share",
            "A ClusterQueue's fair-sharing weighted share",
            ["cluster_queue", "cohort", *role],
        )
        # -- cohorts
        self.cohort_weighted_share = gauge(
            "kueue_cohort_weighted_share",
            "A cohort's fair-sharing weighted share",
            ["cohort", *role],
        )
        self.cohort_subtree_quota = gauge(
            "kueue_cohort_subtree_quota", "Quota of a cohort's subtree", cohort_res
        )
        self.cohort_subtree_admitted_total = counter(
            "kueue_cohort_subtree_admitted_workloads_total",
            "Workloads admitted in a cohort's subtree",
            ["cohort", "priority_class", *role],
        )
        self.cohort_subtree_reservations = gauge(
            "kueue_cohort_subtree_resource_reservations",
            "Quota reserved in a cohort's subtree",
            cohort_res,
        )
        self.cohort_subtree_admitted_active = gauge(
            "kueue_cohort_subtree_admitted_active_workloads",
            "Admitted, unfinished workloads in a cohort's subtree",
            ["cohort", *role],
        )
        self.cohort_info = gauge(
            "kueue_cohort_info",
            "A cohort's place in the cohort tree",
            ["cohort", "parent_cohort", "root_cohort", *role],
        )
        # -- LocalQueues
        self.local_queue_pending = gauge(
            "kueue_local_queue_pending_workloads",
            "Pending workloads per LocalQueue and status",
            ["name", "namespace", "status", *role],
        )
        self.lq_reserving_active = gauge(
            "kueue_local_queue_reserving_active_workloads",
            "Workloads holding quota per LocalQueue",
            lq,
        )
        self.lq_admitted_active = gauge(
            "kueue_local_queue_admitted_active_workloads",
            "Admitted, unfinished workloads per LocalQueue",
            lq,
        )
        self.lq_finished_active = Gauge(
            "kueue_local_queue_finished_workloads",
            "Finished workloads per LocalQueue",
            lq,
            registry=self.side_registry,
        )
        self.lq_status = gauge(
            "kueue_local_queue_status",
            "1 for the LocalQueue's Active condition status, else 0",
            ["name", "namespace", "active", *role],
        )
        self.lq_unadmitted = gauge(
            "kueue_local_queue_unadmitted_workloads",
            "Workloads not admitted per LocalQueue, by reason",
            ["name", "namespace", "cluster_queue", "reason", "underlying_cause", *role],
        )
        self.lq_reservation = gauge(
            "kueue_local_queue_resource_reservation",
            "Quota reserved per LocalQueue, flavor and resource",
            lq_res,
        )
        self.lq_usage = gauge(
            "kueue_local_queue_resource_usage",
            "Quota used by admitted workloads per LocalQueue, flavor and resource",
            lq_res,
        )
        self.lq_fair_sharing_usage = gauge(
            "kueue_local_queue_admission_fair_sharing_usage",
            "A LocalQueue's admission fair-sharing usage",
            ["name", "namespace", "cluster_queue", *role],
        )
        self.lq_quota_reserved_total = counter(
            "kueue_local_queue_quota_reserved_workloads_total", "Workloads that got quota", lq_pc
        )
        self.lq_admitted_total = counter(
            "kueue_local_queue_admitted_workloads_total", "Workloads admitted", lq_pc
        )
        self.lq_finished_total = counter(
            "kueue_local_queue_finished_workloads_total", "Workloads finished", lq_pc
        )
        self.lq_evicted_total = counter(
            "kueue_local_queue_evicted_workloads_total",
            "Workloads evicted, by reason",
            ["name", "namespace", "reason", "underlying_cause", "priority_class", *role],
        )
        self.lq_quota_reserved_wait = histogram(
            "kueue_local_queue_quota_reserved_wait_time_seconds",
            "Creation (or requeue) to quota reserved",
            lq_pc,
        )
        self.lq_admission_wait = histogram(
            "kueue_local_queue_admission_wait_time_seconds",
            "Creation (or requeue) to admitted",
            lq_pc,
        )
        self.lq_admission_checks_wait = histogram(
            "kueue_local_queue_admission_checks_wait_time_seconds",
            "Quota reserved to admitted",
            lq_pc,
        )
        self.lq_ready_wait = histogram(
            "kueue_local_queue_ready_wait_time_seconds",
            "Creation (or requeue) to pods ready",
            lq_pc,
        )
        self.lq_admitted_until_ready_wait = histogram(
            "kueue_local_queue_admitted_until_ready_wait_time_seconds",
            "Admitted to pods ready",
            lq_pc,
        )
        # -- fleetq's own
        self.execution_time = histogram(
            "fleetq_execution_time_seconds", "Admitted to finished, per ClusterQueue", cq_pc
        )

    # -- events -------------------------------------------------------------------------
    def admission_attempt(self, admitted_any: bool, seconds: float) -> None:
        result = "success" if admitted_any else "inadmissible"
        self.admission_attempts.labels(result, self.replica_role).inc()
        self.admission_attempt_duration.labels(result, self.replica_role).observe(seconds)

    def quota_reserved(
        self,
        cluster_queue: str,
        priority_class: str,
        waited: float,
        local_queue: LocalQueueRef | None = None,
    ) -> None:
        labels = (cluster_queue, priority_class, self.replica_role)
        self.quota_reserved_total.labels(*labels).inc()
        self.quota_reserved_wait.labels(*labels).observe(waited)
        lq = self._lq_labels(local_queue, priority_class)
        if lq is not None:
            self.lq_quota_reserved_total.labels(*lq).inc()
            self.lq_quota_reserved_wait.labels(*lq).observe(waited)

    def admitted(
        self,
        cluster_queue: str,
        priority_class: str,
        waited: float,
        checks_waited: float,
        local_queue: LocalQueueRef | None = None,
    ) -> None:
        labels = (cluster_queue, priority_class, self.replica_role)
        self.admitted_total.labels(*labels).inc()
        self.admission_wait.labels(*labels).observe(waited)
        self.admission_checks_wait.labels(*labels).observe(checks_waited)
        for cohort in self._cohort_ancestors.get(cluster_queue, ()):
            self.cohort_subtree_admitted_total.labels(
                cohort, priority_class, self.replica_role
            ).inc()
        lq = self._lq_labels(local_queue, priority_class)
        if lq is not None:
            self.lq_admitted_total.labels(*lq).inc()
            self.lq_admission_wait.labels(*lq).observe(waited)
            self.lq_admission_checks_wait.labels(*lq).observe(checks_waited)

    def evicted(
        self,
        cluster_queue: str,
        reason: str,
        underlying_cause: str,
        priority_class: str,
        local_queue: LocalQueueRef | None = None,
        *,
        first: bool = False,
    ) -> None:
        labels = (cluster_queue, reason, underlying_cause, priority_class, self.replica_role)
        self.evicted_total.labels(*labels).inc()
        if first:
            self.evicted_once_total.labels(*labels).inc()
        if self.local_queues and local_queue is not None:
            self.lq_evicted_total.labels(
                local_queue.name,
                local_queue.namespace,
                reason,
                underlying_cause,
                priority_class,
                self.replica_role,
            ).inc()

    def slice_replaced(self, cluster_queue: str) -> None:
        self.replaced_slices_total.labels(cluster_queue, self.replica_role).inc()

    def preempted(self, preempting_cluster_queue: str, reason: str) -> None:
        self.preempted_total.labels(preempting_cluster_queue, reason, self.replica_role).inc()

    def finished(
        self,
        cluster_queue: str,
        priority_class: str,
        ran_seconds: float,
        local_queue: LocalQueueRef | None = None,
    ) -> None:
        labels = (cluster_queue, priority_class, self.replica_role)
        self.finished_total.labels(*labels).inc()
        self.execution_time.labels(*labels).observe(ran_seconds)
        lq = self._lq_labels(local_queue, priority_class)
        if lq is not None:
            self.lq_finished_total.labels(*lq).inc()

    def _lq_labels(
        self, local_queue: LocalQueueRef | None, priority_class: str
    ) -> tuple[str, str, str, str] | None:
        if not self.local_queues or local_queue is None:
            return None
        return (local_queue.name, local_queue.namespace, priority_class, self.replica_role)

    # -- gauges -------------------------------------------------------------------------
    def set_cluster_queue(
        self,
        name: str,
        figures: QueueFigures,
        status: str,
        parent_cohort: str,
        root_cohort: str,
        *,
        cohort_ancestors: Sequence[str] = (),
        resources: ClusterQueueResources | None = None,
    ) -> None:
        role = self.replica_role
        self.pending_workloads.labels(name, "active", role).set(figures.active_pending)
        self.pending_workloads.labels(name, "inadmissible", role).set(figures.inadmissible_pending)
        self.reserving_active.labels(name, role).set(figures.reserving)
        self.admitted_active.labels(name, role).set(figures.admitted)
        for state in CLUSTER_QUEUE_STATES:
            self.cluster_queue_status.labels(name, state, role).set(1 if state == status else 0)
        self.cluster_queue_info.labels(name, parent_cohort, root_cohort, role).set(1)
        self._cohort_ancestors[name] = tuple(cohort_ancestors)
        if self.cluster_queue_resources and resources is not None:
            self._set_cq_resources(name, resources)

    def _set_cq_resources(self, name: str, resources: ClusterQueueResources) -> None:
        role = self.replica_role
        self._forget_cq_resources(name)
        written: set[tuple[str, ...]] = set()
        cohort = resources.cohort
        for (flavor, resource), quota in resources.quotas.items():
            labels = (cohort, name, flavor, resource, role)
            self.cq_nominal.labels(*labels).set(amount(resource, quota.nominal))
            if quota.borrowing_limit is not None:
                self.cq_borrowing_limit.labels(*labels).set(amount(resource, quota.borrowing_limit))
            if quota.lending_limit is not None:
                self.cq_lending_limit.labels(*labels).set(amount(resource, quota.lending_limit))
            self.cq_reservation.labels(*labels).set(
                amount(resource, resources.reservation.get((flavor, resource), 0))
            )
            self.cq_usage.labels(*labels).set(
                amount(resource, resources.usage.get((flavor, resource), 0))
            )
            written.add(labels)
        self.cq_weighted_share.labels(name, cohort, role).set(resources.weighted_share)
        written.add(("share", name, cohort, role))
        self._cq_resources[name] = written

    def _forget_cq_resources(self, name: str) -> None:
        for labels in self._cq_resources.pop(name, set()):
            if labels[0] == "share":
                _remove(self.cq_weighted_share, *labels[1:])
                continue
            for metric in (
                self.cq_nominal,
                self.cq_borrowing_limit,
                self.cq_lending_limit,
                self.cq_reservation,
                self.cq_usage,
            ):
                _remove(metric, *labels)

    def set_cohort(self, name: str, figures: CohortFigures) -> None:
        role = self.replica_role
        self.forget_cohort(name)
        written: set[tuple[str, ...]] = set()
        self.cohort_info.labels(name, figures.parent, figures.root, role).set(1)
        written.add(("info", name, figures.parent, figures.root, role))
        self.cohort_weighted_share.labels(name, role).set(figures.weighted_share)
        self.cohort_subtree_admitted_active.labels(name, role).set(figures.admitted_active)
        for (flavor, resource), value in figures.subtree_quota.items():
            self.cohort_subtree_quota.labels(name, flavor, resource, role).set(
                amount(resource, value)
            )
            written.add(("quota", name, flavor, resource, role))
        for (flavor, resource), value in figures.reservations.items():
            self.cohort_subtree_reservations.labels(name, flavor, resource, role).set(
                amount(resource, value)
            )
            written.add(("reserved", name, flavor, resource, role))
        self._cohort_series[name] = written

    def forget_cohort(self, name: str) -> None:
        """Drop a cohort's series (before rewriting them, or when it is gone)."""
        role = self.replica_role
        _remove(self.cohort_weighted_share, name, role)
        _remove(self.cohort_subtree_admitted_active, name, role)
        targets = {
            "info": self.cohort_info,
            "quota": self.cohort_subtree_quota,
            "reserved": self.cohort_subtree_reservations,
        }
        for labels in self._cohort_series.pop(name, set()):
            _remove(targets[labels[0]], *labels[1:])

    def cohorts(self) -> list[str]:
        """The cohorts whose series are set (to forget the ones that are gone)."""
        return sorted(self._cohort_series)

    def set_local_queue(
        self, namespace: str, name: str, figures: QueueFigures | LocalQueueFigures
    ) -> None:
        if not self.local_queues:
            return
        full = figures if isinstance(figures, LocalQueueFigures) else LocalQueueFigures(figures)
        counts = full.counts
        role = self.replica_role
        self.local_queue_pending.labels(name, namespace, "active", role).set(counts.active_pending)
        self.local_queue_pending.labels(name, namespace, "inadmissible", role).set(
            counts.inadmissible_pending
        )
        self.lq_reserving_active.labels(name, namespace, role).set(counts.reserving)
        self.lq_admitted_active.labels(name, namespace, role).set(counts.admitted)
        for state in LOCAL_QUEUE_STATES:
            self.lq_status.labels(name, namespace, state, role).set(
                1 if state == full.active else 0
            )
        ref = LocalQueueRef(namespace, name)
        for labels in self._lq_series.pop(ref, set()):
            _remove(self.lq_reservation, *labels)
            _remove(self.lq_usage, *labels)
        written: set[tuple[str, ...]] = set()
        for (flavor, resource), value in full.reservation.items():
            labels = (name, namespace, flavor, resource, role)
            self.lq_reservation.labels(*labels).set(amount(resource, value))
            self.lq_usage.labels(*labels).set(
                amount(resource, full.usage.get((flavor, resource), 0))
            )
            written.add(labels)
        self._lq_series[ref] = written

    def forget_cluster_queue(self, name: str, cohorts: Iterable[tuple[str, str]] = ()) -> None:
        """Drop a deleted ClusterQueue's gauge series so dashboards stop showing it."""
        role = self.replica_role
        for status in ("active", "inadmissible"):
            _remove(self.pending_workloads, name, status, role)
        _remove(self.reserving_active, name, role)
        _remove(self.admitted_active, name, role)
        for state in CLUSTER_QUEUE_STATES:
            _remove(self.cluster_queue_status, name, state, role)
        for parent, root in cohorts:
            _remove(self.cluster_queue_info, name, parent, root, role)
        self._forget_cq_resources(name)
        self._cohort_ancestors.pop(name, None)

    def exposition(self) -> bytes:
        """The text format a Prometheus scrape receives."""
        return generate_latest(self.registry) + generate_latest(self.side_registry)


def _remove(metric: Gauge, *labels: str) -> None:
    with contextlib.suppress(KeyError):  # never set: nothing to remove
        metric.remove(*labels)
