"""A hub that dies between an admission check's Ready and its own Admitted write.

The Workload is left holding quota with every check Ready but without Admitted. Nothing
else will ever change for it, so the engine that takes over must finish the job: admit it
when it first sees it (upstream's workload controller syncs Admitted the same way).
"""

from __future__ import annotations

from typing import Any

from core.adapters.kueue_manifests import admission_check_from_manifest, from_manifest
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import ClusterQueue, LocalQueue, ResourceFlavor, Workload
from tests import builders

NOW = "2026-11-29T10:00:00Z"


def _workload(check_state: str) -> dict[str, Any]:
    return (
        builders.Workload("w", "ns")
        .uid("u1")
        .creation_timestamp(NOW)
        .queue("lq")
        .pod_set(
            template=builders.PodTemplate(image=None, restart_policy=None), requests={"cpu": "1"}
        )
        .condition(
            "QuotaReserved",
            reason="QuotaReserved",
            message="Quota reserved in ClusterQueue cq",
            last_transition_time=NOW,
        )
        .admission(
            "cq",
            builders.pod_set_assignment({"cpu": "default"}, {"cpu": "1"}, count=1),
        )
        .admission_check("gate", check_state, message="m", last_transition_time=NOW)
        .obj()
    )


def _engine() -> Engine:
    engine = Engine(clock=ManualClock(1_000_000.0))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    check = builders.AdmissionCheck("gate").controller_name("example.com/gate").condition("Active")
    engine.upsert_admission_check(admission_check_from_manifest(check.obj()))
    cq = from_manifest(
        builders.ClusterQueue("cq")
        .namespace_selector()
        .admission_checks("gate")
        .resource_group(builders.FlavorQuotas("default", {"cpu": 4}))
        .obj()
    )
    assert isinstance(cq, ClusterQueue)
    engine.upsert_cluster_queue(cq)
    lq = from_manifest(builders.LocalQueue("lq", "ns").cluster_queue("cq").obj())
    assert isinstance(lq, LocalQueue)
    engine.upsert_local_queue(lq)
    return engine


def _admitted(engine: Engine) -> bool:
    status = engine.workload_status("ns/w")
    assert status is not None
    return any(c.type == "Admitted" and c.status for c in status.conditions)


def test_reserved_with_every_check_ready_is_admitted_on_takeover() -> None:
    engine = _engine()
    workload = from_manifest(_workload("Ready"))
    assert isinstance(workload, Workload)
    changes = engine.add_workload(workload)
    assert "ns/w" in changes
    assert _admitted(engine)


def test_reserved_with_a_pending_check_keeps_waiting() -> None:
    engine = _engine()
    workload = from_manifest(_workload("Pending"))
    assert isinstance(workload, Workload)
    engine.add_workload(workload)
    assert not _admitted(engine)
