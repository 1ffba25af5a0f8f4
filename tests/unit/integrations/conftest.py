"""Realistic Jobs, flavors and admitted Workloads shared by the integration unit tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.api.codec import decode
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.priority import PriorityClasses
from integrations.framework.workload_builder import build_workload

MANIFESTS = Path(__file__).parent / "manifests"
NOW = "2025-03-01T10:05:00Z"

_STORED_JOB: dict[str, Any] = yaml.safe_load((MANIFESTS / "job-as-stored.yaml").read_text())

Admit = Callable[..., Workload]


@pytest.fixture
def stored_job() -> dict[str, Any]:
    """A fresh copy of a Job as the apiserver stores it (suspended, never started)."""
    return copy.deepcopy(_STORED_JOB)


def _flavor(name: str, node_labels: dict[str, str], tolerations: list[dict[str, Any]]) -> Any:
    return decode(
        ResourceFlavor,
        {
            "metadata": {"name": name},
            "spec": {"nodeLabels": node_labels, "tolerations": tolerations},
        },
    )


@pytest.fixture
def flavors() -> dict[str, ResourceFlavor]:
    """An on-demand GPU flavor and a spot flavor, each with node labels and a toleration."""
    return {
        "gpu-a100": _flavor(
            "gpu-a100",
            {"cloud.example.com/accelerator": "a100", "cloud.example.com/pool": "gpu"},
            [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        ),
        "spot": _flavor(
            "spot",
            {"cloud.example.com/capacity": "spot"},
            [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        ),
        "plain": _flavor("plain", {}, []),
    }


def _condition(kind: str, reason: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": reason, "lastTransitionTime": NOW}


@pytest.fixture
def admit() -> Admit:
    """Build the Job's Workload and give it an admission (a function of the Job)."""

    def admit_job(
        job: dict[str, Any],
        resource_flavors: dict[str, str],
        *,
        count: int | None = None,
        checks: Sequence[dict[str, Any]] = (),
        admitted: bool = True,
        cluster_queue: str = "team-a-cq",
        topology: bool = False,
    ) -> Workload:
        built = build_workload(BATCH_JOB, job, PriorityClasses())
        assignment: dict[str, Any] = {"name": "main", "flavors": resource_flavors}
        if count is not None:
            assignment["count"] = count
        if topology:
            assignment["topologyAssignment"] = {
                "levels": ["kubernetes.io/hostname"],
                "slices": [],
            }
        conditions = [_condition("QuotaReserved", "QuotaReserved")]
        if admitted:
            conditions.append(_condition("Admitted", "Admitted"))
        raw: dict[str, Any] = {
            "metadata": {
                "name": built.metadata.name,
                "namespace": built.metadata.namespace,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "queueName": built.spec.queue_name,
                "podSets": [
                    {
                        "name": ps.name,
                        "count": ps.count,
                        "template": ps.template,
                        **({"minCount": ps.min_count} if ps.min_count is not None else {}),
                    }
                    for ps in built.spec.pod_sets
                ],
            },
            "status": {
                "conditions": conditions,
                "admission": {"clusterQueue": cluster_queue, "podSetAssignments": [assignment]},
                "admissionChecks": [
                    {"state": "Ready", "lastTransitionTime": NOW, "message": "", **check}
                    for check in checks
                ],
            },
        }
        return decode(Workload, raw)

    return admit_job
