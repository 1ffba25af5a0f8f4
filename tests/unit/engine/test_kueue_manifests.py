"""Manifest translation: defaults applied, statuses rendered in Kueue's shape."""

from __future__ import annotations

from typing import Any

import pytest

from core.adapters.engine_config import engine_config_from_dict, parse_duration
from core.adapters.kueue_manifests import (
    ManifestError,
    cluster_queue_from_manifest,
    cluster_queue_status_to_dict,
    from_manifest,
    local_queue_from_manifest,
    workload_from_manifest,
    workload_status_to_dict,
)
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    FungibilityPolicy,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    StopPolicy,
)
from tests.builders import ClusterQueue, FlavorQuotas, LocalQueue, PodTemplate, Workload

CQ: dict[str, Any] = (
    ClusterQueue("cq")
    .namespace_selector()
    .resource_group(
        FlavorQuotas("default")
        .resource("cpu", "4", borrowing_limit="500m")
        .resource("memory", "8Gi")
    )
    .obj()
)

WL: dict[str, Any] = (
    Workload("w", "ns")
    .uid("u1")
    .creation_timestamp("2024-05-01T10:00:00Z")
    .queue("lq")
    .priority_class("high")
    # No pod set name: the decoder names it "main".
    .pod_set(None, 2, template=PodTemplate(image=None, restart_policy=None), requests={"cpu": "1"})
    .obj()
)


def test_cluster_queue_defaults() -> None:
    cq = cluster_queue_from_manifest(CQ)
    assert cq.queueing_strategy == QueueingStrategy.BEST_EFFORT_FIFO
    assert cq.stop_policy == StopPolicy.NONE
    assert cq.preemption.within_cluster_queue == PreemptionPolicy.NEVER
    assert cq.flavor_fungibility.when_can_borrow == FungibilityPolicy.MAY_STOP_SEARCH
    assert cq.flavor_fungibility.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    quotas = cq.resource_groups[0].flavors[0].resources
    assert quotas[0].nominal == 4000 and quotas[0].borrowing_limit == 500
    assert quotas[1].nominal == 8 * 1024**3
    assert cq.namespace_selector is not None


def test_missing_namespace_selector_selects_nothing() -> None:
    spec = {k: v for k, v in CQ["spec"].items() if k != "namespaceSelector"}
    cq = cluster_queue_from_manifest({**CQ, "spec": spec})
    assert cq.namespace_selector is None


def test_workload_priority_from_class_and_defaults() -> None:
    wl = workload_from_manifest(WL, {"high": 500})
    assert wl.priority == 500
    assert wl.priority_class == "high"
    assert wl.pod_sets[0].name == "main"
    assert wl.pod_sets[0].requests == {"cpu": 1000}
    assert wl.creation_time == 1714557600.0
    assert wl.active


def test_bad_quantity_names_the_field() -> None:
    bad = ClusterQueue("cq").namespace_selector().resource_group(FlavorQuotas("f", {"cpu": "many"}))
    with pytest.raises(
        ManifestError, match=r"ClusterQueue cq resourceGroups\[0\]\.flavors\[0\]\.resources\[0\]"
    ):
        from_manifest(bad.obj())


def test_statuses_render_like_kueue() -> None:
    engine = Engine(clock=ManualClock(1714557600.0))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_cluster_queue(cluster_queue_from_manifest(CQ))
    engine.upsert_local_queue(
        local_queue_from_manifest(LocalQueue("lq", "ns").cluster_queue("cq").obj())
    )
    engine.add_workload(workload_from_manifest(WL, {"high": 500}))
    result = engine.schedule()
    status = workload_status_to_dict(result.changed["ns/w"])
    assert status["admission"] == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "default"},
                "resourceUsage": {"cpu": "2"},
                "count": 2,
            }
        ],
    }
    assert status["conditions"][0] == {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq",
        "lastTransitionTime": "2024-05-01T10:00:00Z",
    }
    cq_status = engine.cluster_queue_status("cq")
    assert cq_status is not None
    rendered = cluster_queue_status_to_dict(cq_status)
    assert rendered["flavorsReservation"] == [
        {
            "name": "default",
            "resources": [
                {"name": "cpu", "total": "2", "borrowed": "0"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ],
        }
    ]
    assert rendered["admittedWorkloads"] == 1


def test_engine_config_from_configuration_sections() -> None:
    cfg = engine_config_from_dict(
        {
            "fairSharing": {},
            "waitForPodsReady": {"timeout": "5m", "requeuingStrategy": {"backoffLimitCount": 3}},
        }
    )
    assert cfg.fair_sharing is not None
    assert cfg.wait_for_pods_ready is not None
    assert cfg.wait_for_pods_ready.timeout_seconds == 300
    assert cfg.wait_for_pods_ready.effective_recovery_timeout == 300
    assert cfg.wait_for_pods_ready.backoff_limit_count == 3
    assert parse_duration("1h30m") == 5400
    with pytest.raises(ValueError, match="unsupported"):
        engine_config_from_dict({"fairsharing": {}})
