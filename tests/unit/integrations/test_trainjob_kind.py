"""The TrainJob kind on the seam: pod sets from its runtime, start and stop through
podSpecOverrides, status, webhook rules, MultiKueue, and the seam's optional protocols."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from core.api.codec import decode
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.api.workload_conditions import WorkloadReason
from devfleet.sample_jobs import gpu_trainjob
from devfleet.sample_jobs import kwok_training_runtime as sample_runtime
from integrations.framework.job_kind import JobKind, JobResource, StatusSyncDecision
from integrations.framework.json_patch import apply_patch
from integrations.framework.pod_set_info import InvalidPodSetInfo
from integrations.framework.priority import PriorityClasses
from integrations.framework.referenced_objects import (
    MissingReferencedObject,
    ReadsReferencedObjects,
)
from integrations.framework.staged_start import StartsInSteps
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.registry import REGISTRY
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.kind import TRAINJOB
from tests.builders import (
    GPU,
    ClusterTrainingRuntime,
    Job,
    TrainingRuntime,
    TrainJob,
    kwok_training_runtime,
    kwok_trainjob,
)

QUEUE = "kueue.x-k8s.io/queue-name"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
UID = "0f3c5f0e-1b2c-4d5e-8f90-123456789abc"
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


class Objects:
    """An `ObjectLookup` over a dict, as the manager's caches answer it."""

    def __init__(self, *objects: Mapping[str, Any]) -> None:
        self.objects: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj

    def get(self, resource: JobResource, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((resource.kind, namespace, name))


def runtime() -> dict[str, Any]:
    return kwok_training_runtime("torch", run_seconds=5).obj()


def stored_trainjob(nodes: int = 4, **labels: str) -> dict[str, Any]:
    return (
        kwok_trainjob("train", nodes=nodes, gpus_per_node=8, runtime="torch")
        .namespace("team-a")
        .uid(UID)
        .resource_version("7")
        .queue("team")
        .labels(labels)
        .suspend()
        .obj()
    )


def bound(*objects: Mapping[str, Any]) -> JobKind:
    return TRAINJOB.bound(Objects(*(objects or (runtime(),))))


def admitted(workload: Workload) -> Workload:
    workload.status.admission = Admission(
        cluster_queue="gpus",
        pod_set_assignments=[
            PodSetAssignment(name=p.name, flavors={GPU: "gpu", "cpu": "gpu"}, count=p.count)
            for p in workload.spec.pod_sets
        ],
    )
    return workload


def child_jobset(status: dict[str, Any], *, uid: str = UID) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "train",
            "namespace": "team-a",
            "ownerReferences": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "train",
                    "uid": uid,
                    "controller": True,
                }
            ],
        },
        "status": status,
    }


def run_writes(job: dict[str, Any], writes: list[Any]) -> dict[str, Any]:
    for write in writes:
        job = apply_patch(job, write.patch)
    return job


def started(kind: JobKind, job: dict[str, Any]) -> tuple[dict[str, Any], Workload]:
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    assert isinstance(kind, StartsInSteps)
    return run_writes(job, kind.plan_start(job, workload, {"gpu": FLAVOR})), workload


# -- registry and seam --------------------------------------------------------------------
def test_the_registry_holds_trainjob_under_upstreams_name_with_its_jobset_as_a_child() -> None:
    assert REGISTRY.get("trainer.kubeflow.org/trainjob") is TRAINJOB
    assert REGISTRY.for_owner("trainer.kubeflow.org/v1alpha1", "TrainJob") is TRAINJOB
    assert ("trainer.kubeflow.org", "TrainJob") in REGISTRY.queued_as_a_whole
    assert isinstance(TRAINJOB, ReadsReferencedObjects)
    assert {r.kind for r in TRAINJOB.referenced_resources} == {
        "ClusterTrainingRuntime",
        "TrainingRuntime",
        "JobSet",
    }
    assert isinstance(bound(), StartsInSteps)


def test_unbound_or_without_its_runtime_the_kind_cannot_build_pod_sets() -> None:
    with pytest.raises(MissingReferencedObject):
        TRAINJOB.pod_sets(stored_trainjob())
    with pytest.raises(MissingReferencedObject, match='ClusterTrainingRuntime "torch" not found'):
        TRAINJOB.bound(Objects()).pod_sets(stored_trainjob())


# -- pod sets -----------------------------------------------------------------------------
def test_one_pod_set_per_runtime_replicated_job_with_the_trainjobs_nodes_and_resources() -> None:
    kind = bound()
    workload = build_workload(kind, stored_trainjob(nodes=4), PriorityClasses())
    assert [(p.name, p.count, p.min_count) for p in workload.spec.pod_sets] == [("node", 4, None)]
    assert workload.metadata.name.startswith("trainjob-train-")
    container = workload.spec.pod_sets[0].template["spec"]["containers"][0]
    assert container["name"] == "node"
    assert container["resources"] == {
        "limits": {GPU: "8"},
        "requests": {"cpu": "1", "memory": "1Gi"},
    }
    owner = workload.metadata.owner_references[0]
    assert (owner.api_version, owner.kind, owner.controller) == (
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
        True,
    )


def test_without_num_nodes_the_trainer_runs_the_runtimes_ml_policy_nodes() -> None:
    job = stored_trainjob()
    del job["spec"]["trainer"]["numNodes"]
    with_policy = runtime()
    with_policy["spec"]["mlPolicy"]["numNodes"] = 3
    assert [p.count for p in bound(with_policy).pod_sets(job)] == [3]


def test_initializers_run_one_replica_and_other_jobs_keep_their_replicas_in_order() -> None:
    def job(parallelism: int) -> Job:
        return Job("x").pods(parallelism).requests({"cpu": "1"})

    rt = (
        ClusterTrainingRuntime("torch")
        .replicated_job("dataset-initializer", job(1), ancestor="dataset-initializer", replicas=3)
        .replicated_job("node", job(1), ancestor="trainer")
        .replicated_job("sidecar", job(2), replicas=2)
        .obj()
    )
    pod_sets = bound(rt).pod_sets(stored_trainjob(nodes=5))
    assert [(p.name, p.count) for p in pod_sets] == [
        ("dataset-initializer", 1),
        ("node", 5),
        ("sidecar", 4),
    ]


def test_with_an_mpi_launcher_running_as_a_node_the_workers_are_one_fewer() -> None:
    rt = (
        ClusterTrainingRuntime("torch")
        .ml_policy({"numNodes": 1, "mpi": {"runLauncherAsNode": True}})
        .replicated_job("launcher", Job("l").requests({"cpu": "1"}), ancestor="trainer")
        .replicated_job("node", Job("n").requests({"cpu": "1"}))
        .obj()
    )
    assert [(p.name, p.count) for p in bound(rt).pod_sets(stored_trainjob(nodes=4))] == [
        ("launcher", 1),
        ("node", 3),
    ]


def test_a_namespaced_training_runtime_is_read_from_the_trainjobs_namespace() -> None:
    rt = kwok_training_runtime("torch", namespaced=True).namespace("team-a").obj()
    job = (
        kwok_trainjob(
            "train", nodes=2, gpus_per_node=1, runtime="torch", runtime_kind="TrainingRuntime"
        )
        .namespace("team-a")
        .obj()
    )
    assert [p.count for p in bound(rt).pod_sets(job)] == [2]
    elsewhere = copy.deepcopy(rt)
    elsewhere["metadata"]["namespace"] = "team-b"
    with pytest.raises(MissingReferencedObject, match='TrainingRuntime "torch"'):
        bound(elsewhere).pod_sets(job)


def test_user_overrides_merge_into_the_pod_sets_as_trainer_merges_them() -> None:
    rt = runtime()
    rt_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod_spec = rt_spec["template"]["spec"]
    pod_spec["nodeSelector"] = {"zone": "a"}
    pod_spec["tolerations"] = [{"key": "old", "operator": "Exists"}]
    pod_spec["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    job = (
        TrainJob.from_obj(stored_trainjob())
        .pod_spec_override(
            ["node"],
            nodeSelector={"disk": "ssd"},
            tolerations=[{"key": "new", "operator": "Exists"}],
            containers=[{"name": "node", "env": [{"name": "A", "value": "2"}]}],
        )
        .pod_spec_override(["other"], nodeSelector={"ignored": "yes"})
        .obj()
    )
    template_spec = bound(rt).pod_sets(job)[0].template["spec"]
    assert template_spec["nodeSelector"] == {"zone": "a", "disk": "ssd"}
    assert template_spec["tolerations"] == [{"key": "new", "operator": "Exists"}]
    assert template_spec["containers"][0]["env"] == [{"name": "A", "value": "2"}]


# -- start and stop -----------------------------------------------------------------------
def test_start_writes_overrides_while_suspended_then_unsuspends() -> None:
    kind = bound()
    job = stored_trainjob()
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    assert isinstance(kind, StartsInSteps)
    writes = kind.plan_start(job, workload, {"gpu": FLAVOR})
    assert len(writes) == 2
    first, second = writes[0].job, writes[1].job
    assert first["spec"]["suspend"] is True
    assert first["metadata"]["annotations"][fields.FIRST_KUEUE_OVERRIDE_ANNOTATION] == "0"
    assert first["spec"]["podSpecOverrides"] == [
        {
            "targetJobs": [{"name": "node"}],
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        }
    ]
    assert second["spec"]["suspend"] is False
    assert run_writes(job, writes) == kind.start(job, workload, {"gpu": FLAVOR})
    # A crash after the first write: planning again only unsuspends; after both, nothing.
    assert [
        w.job["spec"]["suspend"] for w in kind.plan_start(first, workload, {"gpu": FLAVOR})
    ] == [False]
    assert kind.plan_start(second, workload, {"gpu": FLAVOR}) == []


def test_kueues_override_keeps_the_templates_tolerations_and_follows_the_users() -> None:
    rt = runtime()
    pod_spec = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_spec["spec"]["tolerations"] = [{"key": "mine", "operator": "Exists"}]
    job = TrainJob.from_obj(stored_trainjob()).pod_spec_override(["node"], nodeSelector={"a": "b"})
    running, _ = started(bound(rt), job.obj())
    user, kueue = running["spec"]["podSpecOverrides"]
    assert user == {"targetJobs": [{"name": "node"}], "nodeSelector": {"a": "b"}}
    assert running["metadata"]["annotations"][fields.FIRST_KUEUE_OVERRIDE_ANNOTATION] == "1"
    assert [t["key"] for t in kueue["tolerations"]] == ["mine", "gpu"]


def test_a_node_selector_clashing_with_the_flavor_cannot_start_it() -> None:
    kind = bound()
    job = TrainJob.from_obj(stored_trainjob()).pod_spec_override(
        ["node"], nodeSelector={"pool": "cpu"}
    )
    workload = admitted(build_workload(kind, job.obj(), PriorityClasses()))
    with pytest.raises(InvalidPodSetInfo, match="pool"):
        kind.start(job.obj(), workload, {"gpu": FLAVOR})


def test_an_admission_for_other_pod_sets_cannot_start_it() -> None:
    kind = bound()
    job = stored_trainjob()
    workload = admitted(build_workload(kind, job, PriorityClasses()))
    workload.status.admission.pod_set_assignments[0].name = "workers"  # type: ignore[union-attr]
    with pytest.raises(InvalidPodSetInfo):
        kind.start(job, workload, {"gpu": FLAVOR})


def test_a_running_trainjob_matches_its_admitted_workload() -> None:
    kind = bound()
    running, workload = started(kind, stored_trainjob())
    match = match_workloads(kind, running, [workload], {"gpu": FLAVOR})
    assert match.match is workload and not match.stop_job


def test_stop_suspends_at_once_and_restores_the_users_overrides_once_nothing_runs() -> None:
    user_job = TrainJob.from_obj(stored_trainjob()).pod_spec_override(
        ["node"], nodeSelector={"a": "b"}
    )
    running, workload = started(bound(), user_job.obj())
    busy = bound(runtime(), child_jobset({"replicatedJobsStatus": [{"name": "node", "active": 1}]}))
    writes = busy.plan_stop(running, workload)
    assert [w.job["spec"]["suspend"] for w in writes] == [True]
    suspended = run_writes(running, writes)
    assert busy.is_active(suspended)
    quiet = bound(
        runtime(), child_jobset({"replicatedJobsStatus": [{"name": "node", "active": 0}]})
    )
    restored = run_writes(suspended, quiet.plan_stop(suspended, workload))
    expected = user_job.obj()
    assert restored["spec"] == expected["spec"]
    assert restored["metadata"].get("annotations") == expected["metadata"].get("annotations")
    assert quiet.plan_stop(restored, workload) == []


def test_a_multikueue_trainjob_is_restored_without_waiting_for_copied_counts() -> None:
    job = stored_trainjob()
    job["spec"]["managedBy"] = MULTIKUEUE
    running, workload = started(bound(), job)
    busy = bound(runtime(), child_jobset({"replicatedJobsStatus": [{"name": "node", "active": 4}]}))
    stopped = run_writes(running, busy.plan_stop(running, workload))
    assert stopped["spec"]["suspend"] is True and "podSpecOverrides" not in stopped["spec"]


# -- status -------------------------------------------------------------------------------
def _with_status(job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["status"] = status
    return out


def test_finished_from_trainers_complete_or_failed_condition() -> None:
    job = stored_trainjob()
    assert TRAINJOB.finished(job) is None
    done = _with_status(
        job, {"conditions": [{"type": "Complete", "status": "True", "message": "ok"}]}
    )
    failed = _with_status(
        job, {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]}
    )
    suspended = _with_status(job, {"conditions": [{"type": "Suspended", "status": "True"}]})
    assert TRAINJOB.finished(done).reason is WorkloadReason.SUCCEEDED  # type: ignore[union-attr]
    finish = TRAINJOB.finished(failed)
    assert (
        finish is not None and finish.reason is WorkloadReason.FAILED and finish.message == "boom"
    )
    assert TRAINJOB.finished(suspended) is None


def test_ready_active_and_reclaimable_come_from_the_child_jobset_it_owns() -> None:
    job = stored_trainjob(nodes=4)
    kind = bound(
        runtime(),
        child_jobset({"replicatedJobsStatus": [{"name": "node", "ready": 1, "active": 1}]}),
    )
    assert kind.is_active(job) and kind.pods_ready(job)
    assert kind.reclaimable_pods(job) == []
    done = bound(
        runtime(), child_jobset({"replicatedJobsStatus": [{"name": "node", "succeeded": 1}]})
    )
    assert [(r.name, r.count) for r in done.reclaimable_pods(job)] == [("node", 4)]
    stranger = bound(
        runtime(),
        child_jobset({"replicatedJobsStatus": [{"name": "node", "ready": 1}]}, uid="other"),
    )
    assert not stranger.pods_ready(job) and not stranger.is_active(job)


def test_trainers_own_jobs_status_wins_over_the_jobset_where_trainer_fills_it() -> None:
    job = _with_status(
        stored_trainjob(), {"jobsStatus": [{"name": "node", "active": 0, "ready": 0}]}
    )
    kind = bound(
        runtime(),
        child_jobset({"replicatedJobsStatus": [{"name": "node", "ready": 1, "active": 1}]}),
    )
    assert not kind.is_active(job) and not kind.pods_ready(job)


# -- webhook ------------------------------------------------------------------------------
def test_defaulting_suspends_a_queued_trainjob_and_hands_it_to_multikueue() -> None:
    job = stored_trainjob()
    job["spec"]["suspend"] = False
    ctx = WebhookContext(leads_to_multikueue=lambda queue: queue == "team")
    defaulted = TRAINJOB.default(job, ctx)
    assert defaulted["spec"]["suspend"] is True
    assert defaulted["spec"]["managedBy"] == MULTIKUEUE
    trainer_own = copy.deepcopy(job)
    trainer_own["spec"]["managedBy"] = fields.TRAINJOB_CONTROLLER_NAME
    assert TRAINJOB.default(trainer_own, ctx)["spec"]["managedBy"] == MULTIKUEUE
    plain = TRAINJOB.default(job, WebhookContext())
    assert "managedBy" not in plain["spec"]


def test_validation_rejects_a_bad_queue_name_and_a_queue_change_while_running() -> None:
    bad = stored_trainjob()
    bad["metadata"]["labels"][QUEUE] = "Not_A_Name"
    assert TRAINJOB.validate_create(bad, WebhookContext())
    assert not TRAINJOB.validate_create(stored_trainjob(), WebhookContext())
    old = stored_trainjob()
    old["spec"]["suspend"] = False
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE] = "other"
    assert any("queue-name" in str(e) for e in TRAINJOB.validate_update(old, new, WebhookContext()))


# -- MultiKueue ---------------------------------------------------------------------------
def test_the_remote_copy_leaves_kueues_overrides_behind_and_status_comes_back() -> None:
    job = (
        TrainJob.from_obj(stored_trainjob())
        .managed_by()
        .pod_spec_override(["node"], nodeSelector={"a": "b"})
    )
    local, _ = started(bound(), job.obj())
    remote = TRAINJOB.remote_job(local, workload_name="trainjob-train-abc", origin="hub-a")
    assert remote["kind"] == "TrainJob" and "managedBy" not in remote["spec"]
    assert remote["spec"]["podSpecOverrides"] == [
        {"targetJobs": [{"name": "node"}], "nodeSelector": {"a": "b"}}
    ]
    assert fields.FIRST_KUEUE_OVERRIDE_ANNOTATION not in remote["metadata"].get("annotations", {})
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "trainjob-train-abc"
    assert labels["kueue.x-k8s.io/multikueue-origin"] == "hub-a"
    assert "uid" not in remote["metadata"] and "resourceVersion" not in remote["metadata"]
    ran = _with_status(remote, {"conditions": [{"type": "Complete", "status": "True"}]})
    suspended_local = copy.deepcopy(local)
    suspended_local["spec"]["suspend"] = True
    sync = TRAINJOB.remote_status_sync(suspended_local, ran)
    assert sync.decision is StatusSyncDecision.COPY and sync.status == ran["status"]
    mine = copy.deepcopy(local)
    del mine["spec"]["managedBy"]
    assert TRAINJOB.remote_status_sync(mine, ran).decision is StatusSyncDecision.NOT_MANAGED


# -- builders -----------------------------------------------------------------------------
def test_the_builders_equal_devfleets_samples() -> None:
    assert kwok_training_runtime(run_seconds=3).obj() == sample_runtime(run_seconds=3)
    assert kwok_trainjob("x", nodes=2, gpus_per_node=4).obj() == gpu_trainjob(
        "x", nodes=2, gpus_per_node=4
    )
    assert TrainingRuntime("r").obj()["kind"] == "TrainingRuntime"
