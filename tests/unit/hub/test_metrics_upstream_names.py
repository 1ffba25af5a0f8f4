"""The hub serves every metric of upstream Kueue v0.19.2 under its name and labels."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from core.manager.metrics import ManagerMetrics
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics
from tests.unit.hub.upstream_metric_names import (
    parse_metric_declarations,
    upstream_metrics_source,
)


def served_metrics(registry: CollectorRegistry) -> dict[str, tuple[str, ...]]:
    """Name (as scraped, counters with `_total`) → label names, for every vector served."""
    out: dict[str, tuple[str, ...]] = {}
    collectors: Any = registry._collector_to_names  # private: the only way to list them
    for collector in collectors:
        name = collector._name
        if collector._type == "counter":
            name = f"{name}_total"
        out[name] = tuple(collector._labelnames)
    return out


def hub_metrics() -> dict[str, tuple[str, ...]]:
    metrics = ManagerMetrics(replica_role="leader")
    DispatchMetrics(metrics.registry)
    return {**served_metrics(metrics.registry), **served_metrics(metrics.side_registry)}


def test_the_parser_reads_upstream_declarations() -> None:
    upstream = parse_metric_declarations(upstream_metrics_source())
    assert len(upstream) >= 60
    assert upstream["kueue_admission_attempts_total"] == ("result", "replica_role")
    assert upstream["multikueue_workloads_dispatched_total"] == (
        "cluster_queue",
        "cluster",
        "replica_role",
    )


def test_every_upstream_metric_is_served_with_its_labels() -> None:
    upstream = parse_metric_declarations(upstream_metrics_source())
    served = hub_metrics()
    missing = sorted(set(upstream) - set(served))
    assert missing == []
    wrong = {
        name: (served[name], labels) for name, labels in upstream.items() if served[name] != labels
    }
    assert wrong == {}


def test_fleetq_only_metrics_are_named_fleetq() -> None:
    upstream = parse_metric_declarations(upstream_metrics_source())
    served = hub_metrics()
    ours = sorted(name for name in served if name not in upstream)
    assert ours, "fleetq serves series of its own (dispatch latency, execution time)"
    assert [name for name in ours if not name.startswith("fleetq_")] == []
