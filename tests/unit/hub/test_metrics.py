"""Metric names and labels match upstream Kueue's, so users' dashboards keep working."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from core.manager.metrics import ManagerMetrics, QueueFigures


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
    assert _value(metrics, "kueue_execution_time_seconds_sum", **cq) == 60
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
