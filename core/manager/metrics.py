"""Prometheus metrics under upstream Kueue's names and labels, so existing dashboards work.

Every series carries `replica_role` (leader, follower or standalone) as upstream's do. The
hub records events as they happen (admission attempts, reservations, evictions...) and
refreshes the per-queue gauges from the engine's status figures after each change; both
go through this one object so the names are spelled in one place only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_WAIT_BUCKETS = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
_CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)

CLUSTER_QUEUE_STATES = ("pending", "active", "terminating")


@dataclass(frozen=True)
class QueueFigures:
    """A ClusterQueue's or LocalQueue's counts, as the engine reports them."""

    active_pending: int
    inadmissible_pending: int
    reserving: int
    admitted: int


class ManagerMetrics:
    """All of the hub's metrics, in a registry of their own (tests get a fresh one each)."""

    def __init__(self, replica_role: str = "standalone", version: str = "unknown") -> None:
        self.registry = CollectorRegistry()
        self.replica_role = replica_role
        role = ["replica_role"]
        cq_pc = ["cluster_queue", "priority_class", *role]

        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(name, doc, labels, registry=self.registry)

        def gauge(name: str, doc: str, labels: list[str]) -> Gauge:
            return Gauge(name, doc, labels, registry=self.registry)

        def histogram(
            name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
        ) -> Histogram:
            return Histogram(name, doc, labels, buckets=buckets, registry=self.registry)

        self.build_info = gauge(
            "kueue_build_info",
            "Build information of the running manager",
            [
                "git_version",
                "git_commit",
                "build_date",
                "go_version",
                "compiler",
                "platform",
                *role,
            ],
        )
        self.build_info.labels(
            version, "unknown", "unknown", "python", "cpython", "linux/amd64", replica_role
        ).set(1)
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
            ["cluster_queue", *role],
        )
        self.pending_workloads = gauge(
            "kueue_pending_workloads",
            "Pending workloads per ClusterQueue and status",
            ["cluster_queue", "status", *role],
        )
        self.reserving_active = gauge(
            "kueue_reserving_active_workloads",
            "Workloads holding quota per ClusterQueue",
            ["cluster_queue", *role],
        )
        self.admitted_active = gauge(
            "kueue_admitted_active_workloads",
            "Admitted, unfinished workloads per ClusterQueue",
            ["cluster_queue", *role],
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
        self.quota_reserved_total = counter(
            "kueue_quota_reserved_workloads_total", "Workloads that got quota", cq_pc
        )
        self.admitted_total = counter("kueue_admitted_workloads_total", "Workloads admitted", cq_pc)
        self.finished_total = counter("kueue_finished_workloads_total", "Workloads finished", cq_pc)
        self.evicted_total = counter(
            "kueue_evicted_workloads_total",
            "Workloads evicted, by reason",
            ["cluster_queue", "reason", "underlying_cause", "priority_class", *role],
        )
        self.preempted_total = counter(
            "kueue_preempted_workloads_total",
            "Workloads preempted, by preempting queue",
            ["preempting_cluster_queue", "reason", *role],
        )
        self.replaced_slices_total = counter(
            "kueue_replaced_workload_slices_total",
            "Workload slices replaced by a larger slice of their elastic job",
            ["cluster_queue", *role],
        )
        self.quota_reserved_wait = histogram(
            "kueue_quota_reserved_wait_time_seconds",
            "Creation (or requeue) to quota reserved",
            cq_pc,
            _WAIT_BUCKETS,
        )
        self.admission_wait = histogram(
            "kueue_admission_wait_time_seconds",
            "Creation (or requeue) to admitted",
            cq_pc,
            _WAIT_BUCKETS,
        )
        self.admission_checks_wait = histogram(
            "kueue_admission_checks_wait_time_seconds",
            "Quota reserved to admitted",
            cq_pc,
            _WAIT_BUCKETS,
        )
        self.execution_time = histogram(
            "kueue_execution_time_seconds", "Admitted to finished", cq_pc, _WAIT_BUCKETS
        )
        self.local_queue_pending = gauge(
            "kueue_local_queue_pending_workloads",
            "Pending workloads per LocalQueue and status",
            ["name", "namespace", "status", *role],
        )

    # -- events -------------------------------------------------------------------------
    def admission_attempt(self, admitted_any: bool, seconds: float) -> None:
        result = "success" if admitted_any else "inadmissible"
        self.admission_attempts.labels(result, self.replica_role).inc()
        self.admission_attempt_duration.labels(result, self.replica_role).observe(seconds)

    def quota_reserved(self, cluster_queue: str, priority_class: str, waited: float) -> None:
        self.quota_reserved_total.labels(cluster_queue, priority_class, self.replica_role).inc()
        self.quota_reserved_wait.labels(cluster_queue, priority_class, self.replica_role).observe(
            waited
        )

    def admitted(
        self, cluster_queue: str, priority_class: str, waited: float, checks_waited: float
    ) -> None:
        labels = (cluster_queue, priority_class, self.replica_role)
        self.admitted_total.labels(*labels).inc()
        self.admission_wait.labels(*labels).observe(waited)
        self.admission_checks_wait.labels(*labels).observe(checks_waited)

    def evicted(
        self, cluster_queue: str, reason: str, underlying_cause: str, priority_class: str
    ) -> None:
        self.evicted_total.labels(
            cluster_queue, reason, underlying_cause, priority_class, self.replica_role
        ).inc()

    def slice_replaced(self, cluster_queue: str) -> None:
        self.replaced_slices_total.labels(cluster_queue, self.replica_role).inc()

    def preempted(self, preempting_cluster_queue: str, reason: str) -> None:
        self.preempted_total.labels(preempting_cluster_queue, reason, self.replica_role).inc()

    def finished(self, cluster_queue: str, priority_class: str, ran_seconds: float) -> None:
        labels = (cluster_queue, priority_class, self.replica_role)
        self.finished_total.labels(*labels).inc()
        self.execution_time.labels(*labels).observe(ran_seconds)

    # -- gauges -------------------------------------------------------------------------
    def set_cluster_queue(
        self, name: str, figures: QueueFigures, status: str, parent_cohort: str, root_cohort: str
    ) -> None:
        role = self.replica_role
        self.pending_workloads.labels(name, "active", role).set(figures.active_pending)
        self.pending_workloads.labels(name, "inadmissible", role).set(figures.inadmissible_pending)
        self.reserving_active.labels(name, role).set(figures.reserving)
        self.admitted_active.labels(name, role).set(figures.admitted)
        for state in CLUSTER_QUEUE_STATES:
            self.cluster_queue_status.labels(name, state, role).set(1 if state == status else 0)
        self.cluster_queue_info.labels(name, parent_cohort, root_cohort, role).set(1)

    def set_local_queue(self, namespace: str, name: str, figures: QueueFigures) -> None:
        role = self.replica_role
        self.local_queue_pending.labels(name, namespace, "active", role).set(figures.active_pending)
        self.local_queue_pending.labels(name, namespace, "inadmissible", role).set(
            figures.inadmissible_pending
        )

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

    def exposition(self) -> bytes:
        """The text format a Prometheus scrape receives."""
        return generate_latest(self.registry)


def _remove(metric: Gauge, *labels: str) -> None:
    with contextlib.suppress(KeyError):  # never set: nothing to remove
        metric.remove(*labels)
