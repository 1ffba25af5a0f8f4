"""The Kubeflow v1 family and MPIJob on the seam: one test per rule, every kind.

Pod sets per replica type in upstream's order, start/stop through runPolicy.suspend,
conditions, priority class, webhook rules and the MultiKueue copy through runPolicy.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.api.codec import decode
from core.api.meta import Condition
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_kind import JobKind, StatusSyncDecision
from integrations.framework.json_patch import apply_patch
from integrations.framework.pod_set_info import InvalidPodSetInfo
from integrations.framework.priority import PodPriorityClass, PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.kubeflow.jobs.jaxjob import JAXJOB
from integrations.kubeflow.jobs.paddlejob import PADDLEJOB
from integrations.kubeflow.jobs.pytorchjob import PYTORCHJOB
from integrations.kubeflow.jobs.tfjob import TFJOB
from integrations.kubeflow.jobs.xgboostjob import XGBOOSTJOB
from integrations.mpijob.kind import MPIJOB
from integrations.registry import REGISTRY
from tests.builders import (
    JAX,
    MPI,
    PADDLE,
    PYTORCH,
    TENSORFLOW,
    XGBOOST,
    KubeflowJob,
    KubeflowKind,
    PodTemplate,
    kwok_kubeflow_job,
)

NOW = "2026-01-01T00:00:00Z"
QUEUE = "kueue.x-k8s.io/queue-name"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
FLAVOR = decode(
    ResourceFlavor,
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {
            "nodeLabels": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    },
)

# (framework, kind on the seam, builder kind, pod sets of kwok_kubeflow_job with 4 workers)
CASES: list[tuple[str, JobKind, KubeflowKind, list[tuple[str, int]]]] = [
    ("kubeflow.org/pytorchjob", PYTORCHJOB, PYTORCH, [("master", 1), ("worker", 4)]),
    ("kubeflow.org/tfjob", TFJOB, TENSORFLOW, [("chief", 1), ("worker", 4)]),
    ("kubeflow.org/xgboostjob", XGBOOSTJOB, XGBOOST, [("master", 1), ("worker", 4)]),
    ("kubeflow.org/paddlejob", PADDLEJOB, PADDLE, [("master", 1), ("worker", 4)]),
    ("kubeflow.org/jaxjob", JAXJOB, JAX, [("worker", 4)]),
    ("kubeflow.org/mpijob", MPIJOB, MPI, [("launcher", 1), ("worker", 4)]),
]
IDS = [case[0].split("/")[1] for case in CASES]
each_kind = pytest.mark.parametrize(("framework", "kind", "spec", "pod_sets"), CASES, ids=IDS)


def stored(spec: KubeflowKind, **labels: str) -> dict[str, Any]:
    job = (
        kwok_kubeflow_job(spec, "train", workers=4, gpus_per_worker=8, run_seconds=5)
        .namespace("team-a")
        .uid("0f3c5f0e-1b2c-4d5e-8f90-123456789abc")
        .resource_version("7")
        .queue("team")
        .labels(labels)
        .suspend()
    )
    return job.obj()


def admitted(workload: Workload) -> Workload:
    """`workload` with quota reserved and admitted: every pod set on the `gpu` flavor."""
    workload.status.conditions = [
        decode(
            Condition,
            {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": NOW},
        )
        for kind in ("QuotaReserved", "Admitted")
    ]
    workload.status.admission = Admission(
        cluster_queue="gpus",
        pod_set_assignments=[
            PodSetAssignment(
                name=p.name, flavors={"nvidia.com/gpu": "gpu", "cpu": "gpu"}, count=p.count
            )
            for p in workload.spec.pod_sets
        ],
    )
    return workload


def templates(job: dict[str, Any], spec: KubeflowKind) -> dict[str, dict[str, Any]]:
    return {t: r["template"] for t, r in job["spec"][spec.replica_specs_field].items()}


@each_kind
def test_the_registry_holds_the_kind_under_upstreams_name(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    assert REGISTRY.get(framework) is kind
    assert REGISTRY.for_owner(spec.api_version, spec.kind) is kind
    assert kind.resource.api_version == spec.api_version


@each_kind
def test_one_pod_set_per_replica_type_in_upstreams_order(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    # The map's order must not matter: put the workers first.
    field = job["spec"][spec.replica_specs_field]
    job["spec"][spec.replica_specs_field] = dict(reversed(list(field.items())))
    workload = build_workload(kind, job, PriorityClasses())
    assert [(p.name, p.count, p.min_count) for p in workload.spec.pod_sets] == [
        (name, count, None) for name, count in pod_sets
    ]
    assert workload.metadata.name.startswith(f"{spec.kind.lower()}-train-")
    owner = workload.metadata.owner_references[0]
    assert (owner.api_version, owner.kind) == (spec.api_version, spec.kind)


def test_tfjob_pod_sets_follow_chief_master_ps_worker_evaluator() -> None:
    job = KubeflowJob(TENSORFLOW, "tf").replica("Evaluator", 1, PodTemplate("tensorflow"))
    for replica_type, count in (("Worker", 3), ("PS", 2), ("Master", 1), ("Chief", 1)):
        job.replica(replica_type, count, PodTemplate("tensorflow"))
    assert [(p.name, p.count) for p in TFJOB.pod_sets(job.obj())] == [
        ("chief", 1),
        ("master", 1),
        ("ps", 2),
        ("worker", 3),
        ("evaluator", 1),
    ]


def test_replicas_default_to_one_and_a_null_replica_type_is_absent() -> None:
    job = stored(PYTORCH)
    del job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    assert [(p.name, p.count) for p in PYTORCHJOB.pod_sets(job)] == [("master", 1), ("worker", 1)]
    job["spec"]["pytorchReplicaSpecs"]["Master"] = None
    assert [p.name for p in PYTORCHJOB.pod_sets(job)] == ["worker"]


@each_kind
def test_suspend_lives_in_run_policy(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    assert kind.is_suspended(job)
    job["spec"]["runPolicy"]["suspend"] = False
    assert not kind.is_suspended(job)
    job["spec"]["suspend"] = True  # not where these kinds keep it
    assert not kind.is_suspended(job)


@each_kind
def test_start_unsuspends_and_points_every_replica_type_at_its_flavor(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    started = kind.start(job, workload, {"gpu": FLAVOR})
    assert started["spec"]["runPolicy"]["suspend"] is False
    for template in templates(started, spec).values():
        assert template["spec"]["nodeSelector"] == {"pool": "gpu"}
        assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in template["spec"][
            "tolerations"
        ]
    assert kind.pod_sets(job) != kind.pod_sets(started)


@each_kind
def test_stop_suspends_and_restores_the_recorded_templates_in_one_write(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    running = kind.start(job, workload, {"gpu": FLAVOR})
    writes = kind.plan_stop(running, workload)
    assert len(writes) == 1
    stopped = apply_patch(running, writes[0].patch)
    assert stopped["spec"]["runPolicy"]["suspend"] is True
    assert templates(stopped, spec) == templates(job, spec)
    assert kind.plan_stop(stopped, workload) == []


@each_kind
def test_an_admission_for_other_pod_sets_cannot_start_it(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    workload.status.admission.pod_set_assignments[0].name = "other"  # type: ignore[union-attr]
    with pytest.raises(InvalidPodSetInfo):
        kind.start(job, workload, {"gpu": FLAVOR})


@each_kind
def test_a_running_job_matches_its_admitted_workload(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    running = kind.start(job, workload, {"gpu": FLAVOR})
    match = match_workloads(kind, running, [workload], {"gpu": FLAVOR})
    assert match.match is workload and not match.stop_job


def _with_status(job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["status"] = status
    return out


def _condition(kind: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "message": message}


@each_kind
def test_finished_from_succeeded_or_failed_in_condition_order(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    assert kind.finished(job) is None
    running = _with_status(job, {"conditions": [_condition("Created"), _condition("Running")]})
    assert kind.finished(running) is None
    done = _with_status(
        job, {"conditions": [_condition("Running", "False"), _condition("Succeeded", message="ok")]}
    )
    finish = kind.finished(done)
    assert (
        finish is not None and finish.reason is WorkloadReason.SUCCEEDED and finish.message == "ok"
    )
    failed = _with_status(
        job,
        {"conditions": [_condition("Failed", message="backoff"), _condition("Succeeded", "False")]},
    )
    finish = kind.finished(failed)
    assert finish is not None and finish.reason is WorkloadReason.FAILED
    assert finish.message == "backoff"


@each_kind
def test_active_from_replica_statuses_and_ready_once_running(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = _with_status(
        stored(spec),
        {
            "conditions": [_condition("Created"), _condition("Running")],
            "replicaStatuses": {"Worker": {"active": 4}},
        },
    )
    assert kind.is_active(job) and kind.pods_ready(job)
    assert kind.reclaimable_pods(job) == []
    quiet = _with_status(
        stored(spec),
        {
            "conditions": [_condition("Running", "False")],
            "replicaStatuses": {"Worker": {"succeeded": 4}},
        },
    )
    assert not kind.is_active(quiet) and not kind.pods_ready(quiet)


@each_kind
def test_priority_class_from_the_scheduling_policy_then_the_first_replica_type(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    classes = PriorityClasses(
        pod_classes={"low": PodPriorityClass(10), "high": PodPriorityClass(1000)}
    )
    job = stored(spec)
    specs = job["spec"][spec.replica_specs_field]
    specs["Worker"]["template"]["spec"]["priorityClassName"] = "low"
    assert build_workload(kind, job, classes).spec.priority == 10
    job["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": "high"}
    workload = build_workload(kind, job, classes)
    assert workload.spec.priority == 1000
    assert workload.spec.priority_class_ref is not None
    assert workload.spec.priority_class_ref.name == "high"


def test_the_first_replica_type_in_kueues_order_names_the_priority_class() -> None:
    classes = PriorityClasses(
        pod_classes={"low": PodPriorityClass(10), "high": PodPriorityClass(1000)}
    )
    job = stored(PYTORCH)
    job["spec"]["pytorchReplicaSpecs"] = dict(reversed(job["spec"]["pytorchReplicaSpecs"].items()))
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "low"
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["priorityClassName"] = "high"
    assert build_workload(PYTORCHJOB, job, classes).spec.priority == 1000


@each_kind
def test_defaulting_suspends_through_run_policy_and_hands_it_to_multikueue(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    job = stored(spec)
    job["spec"]["runPolicy"] = {}
    ctx = WebhookContext(leads_to_multikueue=lambda queue: queue == "team")
    defaulted = kind.default(job, ctx)
    assert defaulted["spec"]["runPolicy"] == {"suspend": True, "managedBy": MULTIKUEUE}
    assert "suspend" not in defaulted["spec"] and "managedBy" not in defaulted["spec"]
    own = copy.deepcopy(job)
    own["spec"]["runPolicy"]["managedBy"] = kind.own_controller_name
    assert kind.default(own, ctx)["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE
    other = copy.deepcopy(job)
    other["spec"]["runPolicy"]["managedBy"] = "someone.else/controller"
    assert kind.default(other, ctx)["spec"]["runPolicy"]["managedBy"] == "someone.else/controller"
    unqueued = copy.deepcopy(job)
    del unqueued["metadata"]["labels"][QUEUE]
    assert kind.default(unqueued, WebhookContext())["spec"]["runPolicy"] == {}


@each_kind
def test_validation_rejects_a_bad_queue_name_and_a_queue_change_while_running(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    bad = stored(spec)
    bad["metadata"]["labels"][QUEUE] = "Not_A_Name"
    assert kind.validate_create(bad, WebhookContext())
    assert kind.validate_create(stored(spec), WebhookContext()) == []
    old = stored(spec)
    old["spec"]["runPolicy"]["suspend"] = False
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE] = "other"
    errors = kind.validate_update(old, new, WebhookContext())
    assert any("queue-name" in str(e) for e in errors)
    suspended_old, suspended_new = stored(spec), stored(spec)
    suspended_new["metadata"]["labels"][QUEUE] = "other"
    assert kind.validate_update(suspended_old, suspended_new, WebhookContext()) == []


@each_kind
def test_the_remote_copy_drops_run_policy_managed_by_and_its_status_comes_back(
    framework: str, kind: JobKind, spec: KubeflowKind, pod_sets: list[tuple[str, int]]
) -> None:
    local = stored(spec)
    local["spec"]["runPolicy"]["managedBy"] = MULTIKUEUE
    assert kind.managed_by(local) == MULTIKUEUE
    remote = kind.remote_job(local, workload_name="wl-abc", origin="hub-a")
    assert remote["kind"] == spec.kind and remote["apiVersion"] == spec.api_version
    assert "managedBy" not in remote["spec"]["runPolicy"]
    assert remote["spec"]["runPolicy"]["suspend"] is True
    assert local["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE  # the local job untouched
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "wl-abc"
    assert labels["kueue.x-k8s.io/multikueue-origin"] == "hub-a"
    assert "uid" not in remote["metadata"] and "resourceVersion" not in remote["metadata"]
    ran = _with_status(remote, {"conditions": [_condition("Running")]})
    sync = kind.remote_status_sync(local, ran)  # copied even while the local one is suspended
    assert sync.decision is StatusSyncDecision.COPY and sync.status == ran["status"]
    assert kind.remote_status_sync(_with_status(local, ran["status"]), ran).decision is (
        StatusSyncDecision.IN_SYNC
    )
    mine = copy.deepcopy(local)
    del mine["spec"]["runPolicy"]["managedBy"]
    assert kind.remote_status_sync(mine, ran).decision is StatusSyncDecision.NOT_MANAGED


def test_the_mpijob_launcher_job_is_queued_with_the_mpijob() -> None:
    assert ("batch", "Job") in MPIJOB.child_kinds
    assert ("kubeflow.org", "MPIJob") in REGISTRY.queued_as_a_whole
    assert PYTORCHJOB.child_kinds == ()
