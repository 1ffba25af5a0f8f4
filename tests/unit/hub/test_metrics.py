"""Metric names and labels match upstream Kueue's, so users' dashboards keep working."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from core.manager.metrics import (
    ClusterQueueResources,
    CohortFigures,
    LocalQueueFigures,
    LocalQueueRef,
    ManagerMetrics,
    QueueFigures,
    ResourceQuota,
)


def _samples(metrics: ManagerMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def _value(metrics: ManagerMetrics, metric: str, **labels: str) -> float:
    key = (metric, frozenset({**labels, "replica_role": metrics.replica_role}.items()))
    return _samples(metrics)[key]


def test_events_are_counted_under_upstream_names() -> None:
    metrics = ManagerMetrics(replica_role="leader")
    metrics.quota_reserved("cq-a", "high", waited=3.0)
    metrics.admitted("cq-a", "high", waited=4.0, checks_waited=1.0)
    metrics.evicted("cq-a", "Preempted", "InClusterQueue", "high")
    metrics.preempted("cq-b", "InCohortReclamation")
    metrics.finished("cq-a", "high", ran_seconds=60)
    metrics.admission_attempt(admitted_any=True, seconds=0.002)
    metrics.admission_attempt(admitted_any=False, seconds=0.001)
    cq = {"cluster_queue": "cq-a", "priority_class": "high"}
    assert _value(metrics, "kueue_quota_reserved_workloads_total", **cq) == 1
    assert _value(metrics, "kueue_admitted_workloads_total", **cq) == 1
    assert _value(metrics, "kueue_finished_workloads_total", **cq) == 1
    assert _value(metrics, "kueue_admission_wait_time_seconds_count", **cq) == 1
    assert _value(metrics, "kueue_admission_wait_time_seconds_sum", **cq) == 4.0
    assert _value(metrics, "fleetq_execution_time_seconds_sum", **cq) == 60
    assert (
        _value(
            metrics,
            "kueue_evicted_workloads_total",
            cluster_queue="cq-a",
            reason="Preempted",
            underlying_cause="InClusterQueue",
            priority_class="high",
        )
        == 1
    )
    assert (
        _value(
            metrics,
            "kueue_preempted_workloads_total",
            preempting_cluster_queue="cq-b",
            reason="InCohortReclamation",
        )
        == 1
    )
    assert _value(metrics, "kueue_admission_attempts_total", result="success") == 1
    assert _value(metrics, "kueue_admission_attempts_total", result="inadmissible") == 1
    metrics.slice_replaced("cq-a")
    assert _value(metrics, "kueue_replaced_workload_slices_total", cluster_queue="cq-a") == 1


def test_queue_gauges_follow_the_latest_figures_and_go_away_on_delete() -> None:
    metrics = ManagerMetrics()
    metrics.set_cluster_queue("cq", QueueFigures(3, 2, 5, 4), "active", "team", "org")
    assert _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="active") == 3
    assert (
        _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="inadmissible") == 2
    )
    assert _value(metrics, "kueue_reserving_active_workloads", cluster_queue="cq") == 5
    assert _value(metrics, "kueue_admitted_active_workloads", cluster_queue="cq") == 4
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="active") == 1
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="pending") == 0
    assert (
        _value(
            metrics,
            "kueue_cluster_queue_info",
            cluster_queue="cq",
            parent_cohort="team",
            root_cohort="org",
        )
        == 1
    )
    metrics.set_cluster_queue("cq", QueueFigures(0, 0, 1, 1), "pending", "team", "org")
    assert _value(metrics, "kueue_pending_workloads", cluster_queue="cq", status="active") == 0
    assert _value(metrics, "kueue_cluster_queue_status", cluster_queue="cq", status="pending") == 1
    metrics.forget_cluster_queue("cq", [("team", "org")])
    assert not any(dict(labels).get("cluster_queue") == "cq" for _, labels in _samples(metrics))


def test_local_queue_pending_gauge() -> None:
    metrics = ManagerMetrics()
    metrics.set_local_queue("team-a", "default", QueueFigures(7, 1, 0, 0))
    assert (
        _value(
            metrics,
            "kueue_local_queue_pending_workloads",
            name="default",
            namespace="team-a",
            status="active",
        )
        == 7
    )


def test_build_info_is_exposed() -> None:
    text = ManagerMetrics(version="0.1.0").exposition().decode()
    assert "kueue_build_info{" in text and 'git_version="0.1.0"' in text


def test_cluster_queue_resource_series_only_when_enabled() -> None:
    resources = ClusterQueueResources(
        cohort="team",
        quotas={("on-demand", "cpu"): ResourceQuota(4000, borrowing_limit=2000)},
        reservation={("on-demand", "cpu"): 1500},
        usage={("on-demand", "cpu"): 500},
        weighted_share=120,
    )
    figures = QueueFigures(0, 0, 1, 1)
    off = ManagerMetrics()
    off.set_cluster_queue("cq", figures, "active", "team", "team", resources=resources)
    assert "kueue_cluster_queue_nominal_quota{" not in off.exposition().decode()
    on = ManagerMetrics(cluster_queue_resources=True)
    on.set_cluster_queue("cq", figures, "active", "team", "team", resources=resources)
    fr = {"cohort": "team", "cluster_queue": "cq", "flavor": "on-demand", "resource": "cpu"}
    assert _value(on, "kueue_cluster_queue_nominal_quota", **fr) == 4.0
    assert _value(on, "kueue_cluster_queue_borrowing_limit", **fr) == 2.0
    assert _value(on, "kueue_cluster_queue_resource_reservation", **fr) == 1.5
    assert _value(on, "kueue_cluster_queue_resource_usage", **fr) == 0.5
    assert "kueue_cluster_queue_lending_limit{" not in on.exposition().decode()
    assert (
        _value(on, "kueue_cluster_queue_weighted_share", cluster_queue="cq", cohort="team") == 120
    )
    on.forget_cluster_queue("cq", [("team", "team")])
    assert "kueue_cluster_queue_nominal_quota{" not in on.exposition().decode()


def test_cohort_series_and_subtree_admissions() -> None:
    metrics = ManagerMetrics()
    metrics.set_cohort(
        "team",
        CohortFigures(
            parent="org",
            root="org",
            weighted_share=0,
            subtree_quota={("on-demand", "memory"): 2**30},
            reservations={("on-demand", "memory"): 2**29},
            admitted_active=3,
        ),
    )
    res = {"cohort": "team", "flavor": "on-demand", "resource": "memory"}
    assert _value(metrics, "kueue_cohort_subtree_quota", **res) == 2**30
    assert _value(metrics, "kueue_cohort_subtree_resource_reservations", **res) == 2**29
    assert _value(metrics, "kueue_cohort_subtree_admitted_active_workloads", cohort="team") == 3
    info = {"cohort": "team", "parent_cohort": "org", "root_cohort": "org"}
    assert _value(metrics, "kueue_cohort_info", **info) == 1
    metrics.set_cluster_queue(
        "cq", QueueFigures(0, 0, 0, 0), "active", "team", "org", cohort_ancestors=("team", "org")
    )
    metrics.admitted("cq", "high", waited=1.0, checks_waited=0.0)
    for cohort in ("team", "org"):
        assert (
            _value(
                metrics,
                "kueue_cohort_subtree_admitted_workloads_total",
                cohort=cohort,
                priority_class="high",
            )
            == 1
        )
    metrics.forget_cohort("team")
    gauges = {
        name
        for name, labels in _samples(metrics)
        if dict(labels).get("cohort") == "team" and not name.endswith("_created")
    }
    assert gauges == {"kueue_cohort_subtree_admitted_workloads_total"}  # counters stay
    assert metrics.cohorts() == []


def test_local_queue_series_follow_the_gate() -> None:
    lq = LocalQueueRef("team-a", "default")
    figures = LocalQueueFigures(
        QueueFigures(1, 0, 2, 1),
        active="False",
        reservation={("on-demand", "cpu"): 2000},
        usage={("on-demand", "cpu"): 1000},
    )
    on = ManagerMetrics()
    on.set_local_queue("team-a", "default", figures)
    on.quota_reserved("cq", "", 2.0, lq)
    on.admitted("cq", "", 3.0, 1.0, lq)
    on.evicted("cq", "Preempted", "", "", lq, first=True)
    on.evicted("cq", "Preempted", "", "", lq)
    on.finished("cq", "", 10.0, lq)
    q = {"name": "default", "namespace": "team-a"}
    assert _value(on, "kueue_local_queue_reserving_active_workloads", **q) == 2
    assert _value(on, "kueue_local_queue_admitted_active_workloads", **q) == 1
    assert _value(on, "kueue_local_queue_status", **q, active="False") == 1
    assert _value(on, "kueue_local_queue_status", **q, active="True") == 0
    fr = {**q, "flavor": "on-demand", "resource": "cpu"}
    assert _value(on, "kueue_local_queue_resource_reservation", **fr) == 2.0
    assert _value(on, "kueue_local_queue_resource_usage", **fr) == 1.0
    pc = {**q, "priority_class": ""}
    assert _value(on, "kueue_local_queue_quota_reserved_workloads_total", **pc) == 1
    assert _value(on, "kueue_local_queue_admitted_workloads_total", **pc) == 1
    assert _value(on, "kueue_local_queue_finished_workloads_total", **pc) == 1
    assert _value(on, "kueue_local_queue_admission_wait_time_seconds_sum", **pc) == 3.0
    evicted = {**pc, "reason": "Preempted", "underlying_cause": ""}
    assert _value(on, "kueue_local_queue_evicted_workloads_total", **evicted) == 2
    once = {
        "cluster_queue": "cq",
        "reason": "Preempted",
        "underlying_cause": "",
        "priority_class": "",
    }
    assert _value(on, "kueue_evicted_workloads_once_total", **once) == 1
    off = ManagerMetrics(local_queues=False)
    off.set_local_queue("team-a", "default", figures)
    off.admitted("cq", "", 3.0, 1.0, lq)
    assert "kueue_local_queue_" not in "".join(
        line for line in off.exposition().decode().splitlines() if not line.startswith("#")
    )
