"""Manager Workloads and worker copies as JSON, shaped as the apiservers return them."""

from __future__ import annotations

from typing import Any

T0 = 1_750_000_000.0
NOW = T0 + 100
CHECK = "mk"
ORIGIN = "multikueue"


def stamp(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    type_: str, status: bool = True, reason: str = "", message: str = "", at: float = T0
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason or type_,
        "message": message,
        "lastTransitionTime": stamp(at),
    }


def pod_sets(gpus: int = 0, cpu: str = "1", count: int = 1) -> list[dict[str, Any]]:
    requests: dict[str, Any] = {"cpu": cpu}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    return [
        {
            "name": "main",
            "count": count,
            "template": {
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}]
                }
            },
        }
    ]


def local_workload(
    *,
    check_state: str = "Pending",
    reserved: bool = True,
    conditions: list[dict[str, Any]] | None = None,
    cluster: str | None = None,
    nominated: list[str] | None = None,
    other_checks: dict[str, str] | None = None,
    priority: int | None = None,
    gpus: int = 0,
    check_at: float = T0,
) -> dict[str, Any]:
    checks = [
        {
            "name": CHECK,
            "state": check_state,
            "message": "",
            "lastTransitionTime": stamp(check_at),
        }
    ]
    for name, state in (other_checks or {}).items():
        checks.append(
            {"name": name, "state": state, "message": "", "lastTransitionTime": stamp(T0)}
        )
    conds = list(conditions or [])
    if reserved:
        conds.append(condition("QuotaReserved", at=T0))
    status: dict[str, Any] = {"conditions": conds, "admissionChecks": checks}
    status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    if cluster:
        status["clusterName"] = cluster
    if nominated:
        status["nominatedClusterNames"] = nominated
    spec: dict[str, Any] = {"queueName": "lq", "podSets": pod_sets(gpus=gpus)}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-a-1234",
            "namespace": "ns",
            "uid": "local-uid",
            "resourceVersion": "10",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "job-a",
                    "uid": "job-uid",
                    "controller": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def remote_copy(
    local: dict[str, Any],
    *,
    admitted_at: float | None = None,
    conditions: list[dict[str, Any]] | None = None,
    uid: str = "remote-uid",
) -> dict[str, Any]:
    conds = list(conditions or [])
    if admitted_at is not None:
        conds.append(condition("QuotaReserved", at=admitted_at))
        conds.append(condition("Admitted", at=admitted_at))
    labels = dict(local["metadata"]["labels"])
    labels["kueue.x-k8s.io/multikueue-origin"] = ORIGIN
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": local["metadata"]["name"],
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": "5",
            "labels": labels,
        },
        "spec": dict(local["spec"]),
        "status": {"conditions": conds},
    }


def remote_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "job-a",
            "namespace": "ns",
            "uid": "remote-job-uid",
            "labels": {
                "kueue.x-k8s.io/multikueue-origin": ORIGIN,
                "kueue.x-k8s.io/prebuilt-workload-name": "job-a-1234",
            },
        },
        "spec": {},
    }
