"""Manager Workloads and worker copies as JSON, shaped as the apiservers return them."""

from __future__ import annotations

from typing import Any

from tests.builders import QUEUE_LABEL, PodTemplate, Workload

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
    template = PodTemplate(image="x", restart_policy=None).requests(requests)
    return [{"name": "main", "count": count, "template": template.obj()}]


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
    workload = (
        Workload("job-a-1234", "ns")
        .uid("local-uid")
        .resource_version("10")
        .label(QUEUE_LABEL, "lq")
        .owned_by_job("job-a", "job-uid")
        .queue("lq")
        .spec(podSets=pod_sets(gpus=gpus))
        .conditions(*(conditions or []))
    )
    if reserved:
        workload.conditions(condition("QuotaReserved", at=T0))
    workload.admission_check(CHECK, check_state, last_transition_time=stamp(check_at))
    for name, state in (other_checks or {}).items():
        workload.admission_check(name, state, last_transition_time=stamp(T0))
    workload.admission("cq")
    if cluster:
        workload.cluster_name(cluster)
    if nominated:
        workload.nominated_clusters(*nominated)
    if priority is not None:
        workload.priority(priority)
    return workload.obj()


def remote_copy(
    local: dict[str, Any],
    *,
    admitted_at: float | None = None,
    conditions: list[dict[str, Any]] | None = None,
    uid: str = "remote-uid",
) -> dict[str, Any]:
    remote = (
        Workload(local["metadata"]["name"], "ns")
        .uid(uid)
        .resource_version("5")
        .labels(local["metadata"]["labels"])
        .multikueue_origin(ORIGIN)
        .spec(**local["spec"])
        .conditions(*(conditions or []))
    )
    if admitted_at is not None:
        remote.conditions(condition("QuotaReserved", at=admitted_at))
        remote.conditions(condition("Admitted", at=admitted_at))
    return remote.obj()


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
