"""The Ray kinds on the seam (RayJob, RayCluster, RayService): pod sets, start and stop,
status, webhook rules, MultiKueue copy — upstream v0.19.2's semantics."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.codec import decode
from core.api.meta import Condition, ConditionStatus
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_capabilities import skips as skipped
from integrations.framework.job_kind import StatusSyncDecision
from integrations.framework.json_patch import apply_patch
from integrations.framework.pod_selector import SelectsPodsFromStatus
from integrations.framework.pod_set_info import InvalidPodSetInfo
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.ray.raycluster_kind import RAYCLUSTER
from integrations.ray.rayjob_kind import RAYJOB
from integrations.ray.rayservice_kind import RAYSERVICE
from integrations.registry import REGISTRY
from tests.builders import PodTemplate, RayCluster, RayJob, kwok_rayjob

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
QUEUED = WebhookContext()
NOW = datetime(2025, 3, 1, 10, 5, tzinfo=UTC)


def stored(builder: RayJob | RayCluster) -> dict[str, Any]:
    return builder.namespace("team-a").uid("a1b2").resource_version("7").queue("team").obj()


def rayjob(**shape: Any) -> dict[str, Any]:
    return stored(
        kwok_rayjob(
            "train", workers=shape.get("workers", 2), gpus_per_worker=1, run_seconds=3
        ).suspend()
    )


def raycluster() -> dict[str, Any]:
    cluster = RayCluster("serve").suspend().worker_group("cpu", 3, PodTemplate("ray-worker"))
    return stored(cluster)


def admitted(workload: Workload) -> Workload:
    workload.status.admission = Admission(
        cluster_queue="gpus",
        pod_set_assignments=[
            PodSetAssignment(name=p.name, flavors={"cpu": "gpu"}, count=p.count)
            for p in workload.spec.pod_sets
        ],
    )
    workload.status.conditions.append(
        Condition(
            type="QuotaReserved",
            status=ConditionStatus.TRUE,
            reason="QuotaReserved",
            message="reserved",
            last_transition_time=NOW,
        )
    )
    return workload


def scheduling_fields(cluster: dict[str, Any]) -> list[Any]:
    templates = [cluster["headGroupSpec"]["template"]]
    templates += [group["template"] for group in cluster.get("workerGroupSpecs") or ()]
    return [
        (
            (t.get("metadata") or {}).get("labels"),
            t["spec"].get("nodeSelector"),
            t["spec"].get("tolerations"),
        )
        for t in templates
    ]


def with_status(job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["status"] = status
    return out


def test_the_registry_holds_the_ray_kinds_and_queues_their_clusters_with_them() -> None:
    assert REGISTRY.get("ray.io/rayjob") is RAYJOB
    assert REGISTRY.get("ray.io/raycluster") is RAYCLUSTER
    assert REGISTRY.get("ray.io/rayservice") is RAYSERVICE
    assert REGISTRY.for_owner("ray.io/v1", "RayJob") is RAYJOB
    ray = REGISTRY.enabled(["ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"])
    assert {("ray.io", "RayJob"), ("ray.io", "RayService")} <= ray.queued_as_a_whole
    assert ("ray.io", "RayCluster") not in ray.queued_as_a_whole
    # With plain Pods enabled every queued kind owns its pods, a RayCluster too.
    assert ("ray.io", "RayCluster") in REGISTRY.queued_as_a_whole
    # Without RayCluster enabled, nothing a RayJob makes is a queued kind.
    alone = REGISTRY.enabled(["ray.io/rayjob"])
    assert ("ray.io", "RayJob") not in alone.queued_as_a_whole


def test_a_rayjob_is_head_then_worker_groups_then_the_submitter() -> None:
    job = rayjob(workers=3)
    workload = build_workload(RAYJOB, job, PriorityClasses())
    assert workload.metadata.name.startswith("rayjob-train-")
    assert [(p.name, p.count, p.min_count) for p in workload.spec.pod_sets] == [
        ("head", 1, None),
        ("workers", 3, None),
        ("submitter", 1, None),
    ]


def test_worker_counts_are_replicas_times_hosts_and_group_names_are_lowercased() -> None:
    job = (
        RayJob("t")
        .worker_group("Big", 2, PodTemplate("w"), numOfHosts=4, minReplicas=1)
        .worker_group("one", None, PodTemplate("w"))
        .obj()
    )
    assert [(p.name, p.count) for p in RAYJOB.pod_sets(job)] == [
        ("head", 1),
        ("big", 8),
        ("one", 1),
        ("submitter", 1),
    ]


def test_the_default_submitter_is_kuberays_and_sidecar_or_http_modes_count_as_upstream() -> None:
    job = RayJob("t").head(PodTemplate("ray-head", "rayproject/ray:2.46")).obj()
    submitter = RAYJOB.pod_sets(job)[-1].template["spec"]
    assert submitter["restartPolicy"] == "Never"
    [container] = submitter["containers"]
    assert container["name"] == "ray-job-submitter"
    assert container["image"] == "rayproject/ray:2.46"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    sidecar = RayJob("t").submission_mode("SidecarMode").obj()
    pod_sets = RAYJOB.pod_sets(sidecar)
    assert [p.name for p in pod_sets] == ["head"]
    names = [c["name"] for c in pod_sets[0].template["spec"]["containers"]]
    assert names == ["ray-head", "ray-job-submitter"]
    http = RayJob("t").submission_mode("HTTPMode").obj()
    assert [p.name for p in RAYJOB.pod_sets(http)] == ["head"]


def test_the_head_counts_the_autoscaler_and_the_redis_cleanup_kuberay_adds() -> None:
    cluster = RayCluster("c").head(PodTemplate("ray-head").requests({"cpu": "100m"})).autoscaling()
    cluster.annotation("ray.io/ft-enabled", "true")
    head = RAYCLUSTER.pod_sets(cluster.obj())[0].template["spec"]["containers"]
    assert head[0]["resources"]["requests"] == {"cpu": "200m", "memory": "256Mi"}
    assert head[1]["name"] == "autoscaler"
    assert head[1]["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}


def test_start_points_every_group_and_the_submitter_at_the_flavor_and_stop_restores() -> None:
    job = rayjob()
    workload = admitted(build_workload(RAYJOB, job, PriorityClasses()))
    started = RAYJOB.start(job, workload, {"gpu": FLAVOR})
    assert started["spec"]["suspend"] is False
    cluster = started["spec"]["rayClusterSpec"]
    templates = [
        cluster["headGroupSpec"]["template"],
        cluster["workerGroupSpecs"][0]["template"],
        started["spec"]["submitterPodTemplate"],
    ]
    for template in templates:
        assert template["spec"]["nodeSelector"] == {"pool": "gpu"}
        assert template["spec"]["tolerations"][0]["key"] == "gpu"
        assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"]
    match = match_workloads(RAYJOB, started, [workload], {"gpu": FLAVOR})
    assert match.match is workload and not match.stop_job
    [write] = RAYJOB.plan_stop(started, workload)
    stopped = apply_patch(started, write.patch)
    assert stopped["spec"]["suspend"] is True
    assert scheduling_fields(stopped["spec"]["rayClusterSpec"]) == scheduling_fields(
        job["spec"]["rayClusterSpec"]
    )
    assert stopped["spec"]["submitterPodTemplate"] == job["spec"]["submitterPodTemplate"]
    assert RAYJOB.plan_stop(stopped, workload) == []


def test_a_rayjob_without_a_submitter_template_gets_kuberays_default_pointed_at_the_flavor() -> (
    None
):
    job = stored(RayJob("t").suspend())
    workload = admitted(build_workload(RAYJOB, job, PriorityClasses()))
    started = RAYJOB.start(job, workload, {"gpu": FLAVOR})
    submitter = started["spec"]["submitterPodTemplate"]
    assert submitter["spec"]["containers"][0]["name"] == "ray-job-submitter"
    assert submitter["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert match_workloads(RAYJOB, started, [workload], {"gpu": FLAVOR}).match is workload


def test_an_admission_for_other_pod_sets_cannot_start_a_rayjob() -> None:
    job = rayjob()
    workload = admitted(build_workload(RAYJOB, job, PriorityClasses()))
    workload.status.admission.pod_set_assignments.pop()  # type: ignore[union-attr]
    with pytest.raises(InvalidPodSetInfo):
        RAYJOB.start(job, workload, {"gpu": FLAVOR})


def test_a_rayjob_finishes_from_its_deployment_status_and_succeeds_from_its_job_status() -> None:
    job = rayjob()
    running = with_status(job, {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"})
    assert RAYJOB.finished(running) is None and RAYJOB.is_active(running)
    done = with_status(job, {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"})
    finish = RAYJOB.finished(done)
    assert finish is not None and finish.reason is WorkloadReason.SUCCEEDED
    failed = with_status(
        job, {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "oom"}
    )
    finish = RAYJOB.finished(failed)
    assert finish is not None and finish.reason is WorkloadReason.FAILED
    assert finish.message == "oom"
    assert not RAYJOB.is_active(job)
    assert not RAYJOB.is_active(with_status(job, {"jobDeploymentStatus": "Suspended"}))
    ready = with_status(job, {"rayClusterStatus": {"state": "ready"}})
    assert RAYJOB.pods_ready(ready) and not RAYJOB.pods_ready(running)


def test_a_rayjob_on_an_existing_cluster_is_left_alone_and_its_pods_come_from_its_status() -> None:
    on_existing = RayJob("t").queue("team").cluster_selector({"ray.io/cluster": "c"}).obj()
    assert skipped(RAYJOB, on_existing) and not skipped(RAYJOB, rayjob())
    assert isinstance(RAYJOB, SelectsPodsFromStatus)
    assert RAYJOB.pod_label_selector(rayjob()) is None
    running = with_status(rayjob(), {"rayClusterName": "train-x7k2p"})
    assert RAYJOB.pod_label_selector(running) == "ray.io/cluster=train-x7k2p"


def test_defaulting_suspends_a_queued_rayjob_and_hands_it_to_multikueue() -> None:
    job = rayjob()
    job["spec"]["suspend"] = False
    ctx = WebhookContext(leads_to_multikueue=lambda queue: queue == "team")
    defaulted = RAYJOB.default(job, ctx)
    assert defaulted["spec"]["suspend"] is True
    assert defaulted["spec"]["managedBy"] == MULTIKUEUE
    job["spec"]["managedBy"] = "ray.io/kuberay-operator"
    assert RAYJOB.default(job, ctx)["spec"]["managedBy"] == MULTIKUEUE


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda j: j.shutdown_after_finishes(False), "spec.shutdownAfterJobFinishes"),
        (lambda j: j.autoscaling(), "spec.rayClusterSpec.enableInTreeAutoscaling"),
        (
            lambda j: j.worker_group("head", 1, PodTemplate("w")),
            "spec.rayClusterSpec.workerGroupSpecs[0].groupName",
        ),
        (lambda j: j.spec(clusterSelector={"a": "b"}), "spec.clusterSelector"),
        (lambda j: j.set("spec.rayClusterSpec", None), "spec.rayClusterSpec"),
    ],
)
def test_a_queued_rayjob_is_refused_what_upstream_refuses(change: Any, path: str) -> None:
    job = change(RayJob("t").queue("team")).obj()
    if job["spec"].get("rayClusterSpec") is None:
        job["spec"].pop("rayClusterSpec", None)
    errors = RAYJOB.validate_create(job, QUEUED)
    assert [e.path for e in errors] == [path]
    unqueued = copy.deepcopy(job)
    del unqueued["metadata"]["labels"]
    assert RAYJOB.validate_create(unqueued, QUEUED) == []


def test_too_many_worker_groups_are_refused() -> None:
    job = RayJob("t").queue("team")
    for index in range(18):
        job.worker_group(f"g{index}", 1, PodTemplate("w"))
    errors = RAYJOB.validate_create(job.obj(), QUEUED)
    assert [e.path for e in errors] == ["spec.rayClusterSpec.workerGroupSpecs"]


def test_updates_are_validated_while_queued_or_when_the_queue_label_is_removed() -> None:
    old = RayJob("t").queue("team").obj()
    bad = copy.deepcopy(old)
    bad["spec"]["shutdownAfterJobFinishes"] = False
    assert RAYJOB.validate_update(old, bad, QUEUED)
    del bad["metadata"]["labels"]
    assert RAYJOB.validate_update(old, bad, QUEUED)
    never = copy.deepcopy(bad)
    assert RAYJOB.validate_update(never, bad, QUEUED) == []


def test_a_raycluster_runs_until_deleted_and_starts_and_stops_like_a_rayjob() -> None:
    cluster = raycluster()
    workload = admitted(build_workload(RAYCLUSTER, cluster, PriorityClasses()))
    assert [(p.name, p.count) for p in workload.spec.pod_sets] == [("head", 1), ("cpu", 3)]
    started = RAYCLUSTER.start(cluster, workload, {"gpu": FLAVOR})
    assert started["spec"]["suspend"] is False
    head = started["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["nodeSelector"] == {"pool": "gpu"}
    ready = with_status(started, {"state": "ready"})
    assert RAYCLUSTER.finished(ready) is None
    assert RAYCLUSTER.is_active(ready) and RAYCLUSTER.pods_ready(ready)
    assert not RAYCLUSTER.is_active(with_status(started, {"state": "suspended"}))
    [write] = RAYCLUSTER.plan_stop(ready, workload)
    stopped = apply_patch(ready, write.patch)
    assert stopped["spec"]["suspend"] is True
    assert scheduling_fields(stopped["spec"]) == scheduling_fields(cluster["spec"])
    errors = RAYCLUSTER.validate_create(RayCluster("c").queue("q").autoscaling().obj(), QUEUED)
    assert [e.path for e in errors] == ["spec.enableInTreeAutoscaling"]
    assert "elastic job" in errors[0].message


def test_a_rayservice_suspends_through_its_cluster_spec() -> None:
    service = RayCluster("svc").worker_group("w", 2, PodTemplate("w")).obj()
    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": "svc",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {"serveConfigV2": "applications: []", "rayClusterSpec": service["spec"]},
    }
    defaulted = RAYSERVICE.default(service, QUEUED)
    assert defaulted["spec"]["rayClusterSpec"]["suspend"] is True
    assert "suspend" not in defaulted["spec"]
    assert RAYSERVICE.is_suspended(defaulted)
    workload = admitted(build_workload(RAYSERVICE, defaulted, PriorityClasses()))
    assert [p.name for p in workload.spec.pod_sets] == ["head", "w"]
    started = RAYSERVICE.start(defaulted, workload, {"gpu": FLAVOR})
    assert not RAYSERVICE.is_suspended(started)
    ready = with_status(started, {"conditions": [{"type": "Ready", "status": "True"}]})
    assert RAYSERVICE.is_active(ready) and RAYSERVICE.finished(ready) is None


def test_the_remote_copy_drops_managed_by_and_status_comes_back_even_while_suspended() -> None:
    local = rayjob()
    local["spec"]["managedBy"] = MULTIKUEUE
    remote = RAYJOB.remote_job(local, workload_name="rayjob-train-abc", origin="hub-a")
    assert remote["kind"] == "RayJob" and "managedBy" not in remote["spec"]
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "rayjob-train-abc"
    assert labels["kueue.x-k8s.io/multikueue-origin"] == "hub-a"
    assert "uid" not in remote["metadata"]
    ran = with_status(remote, {"jobDeploymentStatus": "Running"})
    sync = RAYJOB.remote_status_sync(local, ran)  # local is still suspended: upstream copies
    assert sync.decision is StatusSyncDecision.COPY and sync.status == ran["status"]
    del local["spec"]["managedBy"]
    assert RAYJOB.remote_status_sync(local, ran).decision is StatusSyncDecision.NOT_MANAGED


def test_only_a_rayservices_serve_config_edit_is_forwarded_to_the_workers_copy() -> None:
    from integrations.framework.remote_spec_sync import SyncsRemoteSpec

    service = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {
            "managedBy": MULTIKUEUE,
            "serveConfigV2": "applications: [a]",
            "rayClusterSpec": RayCluster("x").obj()["spec"],
        },
    }
    remote = RAYSERVICE.remote_job(service, workload_name="rayservice-svc-1", origin="hub")
    assert isinstance(RAYSERVICE, SyncsRemoteSpec)
    assert not isinstance(RAYJOB, SyncsRemoteSpec) and not isinstance(RAYCLUSTER, SyncsRemoteSpec)
    assert RAYSERVICE.remote_spec_patch(service, remote) is None
    edited = copy.deepcopy(service)
    edited["spec"]["serveConfigV2"] = "applications: [a, b]"
    edited["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    assert RAYSERVICE.remote_spec_patch(edited, remote) == {
        "spec": {"serveConfigV2": "applications: [a, b]"}
    }
