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

NOW = "2026-11-29T10:00:00Z"


def _workload(check_state: str) -> dict[str, Any]:
    return {
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "creationTimestamp": NOW},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "Quota reserved in ClusterQueue cq",
                    "lastTransitionTime": NOW,
                }
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": "default"},
                        "resourceUsage": {"cpu": "1"},
                        "count": 1,
                    }
                ],
            },
            "admissionChecks": [
                {
                    "name": "gate",
                    "state": check_state,
                    "message": "m",
                    "lastTransitionTime": NOW,
                }
            ],
        },
    }


def _engine() -> Engine:
    engine = Engine(clock=ManualClock(1_000_000.0))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_admission_check(
        admission_check_from_manifest(
            {
                "kind": "AdmissionCheck",
                "metadata": {"name": "gate"},
                "spec": {"controllerName": "example.com/gate"},
                "status": {"conditions": [{"type": "Active", "status": "True"}]},
            }
        )
    )
    cq = from_manifest(
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "admissionChecksStrategy": {"admissionChecks": [{"name": "gate"}]},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 4}]}
                        ],
                    }
                ],
            },
        }
    )
    assert isinstance(cq, ClusterQueue)
    engine.upsert_cluster_queue(cq)
    lq = from_manifest(
        {
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
        }
    )
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
