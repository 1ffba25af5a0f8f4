"""Ray end to end with the real KubeRay operator (v1.5.0) on every cluster of the fleet.

Single cluster (the hub on worker-1, no MultiKueue, 16 GPUs of quota):
- a RayJob is one Workload (head, workers, submitter), is admitted, its head and worker
  pods land on the flavor's GPU nodes; preempted by a higher-priority Job it is suspended
  with its templates restored and KubeRay removes its cluster; it is admitted and runs
  again, on the flavor's nodes, once the Job is done.
MultiKueue (the shared hub and agents):
- a RayJob created on the manager runs on exactly one worker, its status comes back, it
  finishes (its submitter "runs" on kwok, the Ray dashboard stand-in reports success) and
  frees its quota,
  `fleetq logs` prints its head pod's log (served by kwok through the worker's apiserver;
  a batch Job's too),
  and its remote copies (the RayJob and the RayCluster KubeRay made) are removed once it
  finished;
- a RayCluster created on the manager runs on exactly one worker, its ready state comes
  back, it holds its quota while it runs, and deleting it on the manager frees the quota
  and removes the worker's copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from cli.main import main
from devfleet.cluster_access import ClusterAccess
from devfleet.kwok_pod_logs import LOG_TEXT
from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import (
    GPU,
    PodTemplate,
    RayCluster,
    WorkloadPriorityClass,
    kwok_job,
    kwok_rayjob,
)
from tests.e2e.gpu_queue import POOL_LABEL
from tests.e2e.multikueue_fixtures import ORIGIN_LABEL, ClusterView, condition_of, until, wait_gone
from tests.e2e.single_cluster_hub import GROUP, VERSION, create_kueue_object

RAY = ("ray.io", "v1")
MANAGED_BY = "kueue.x-k8s.io/multikueue"
CLUSTER_LABEL = "ray.io/cluster"
Json = dict[str, Any]


# -- reading Ray objects, their Workloads and pods -----------------------------------------
def _ray(custom: Any, namespace: str, plural: str, name: str) -> Json | None:
    try:
        found: Json = custom.get_namespaced_custom_object(*RAY, namespace, plural, name)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def _create_ray(custom: Any, namespace: str, plural: str, body: Json) -> None:
    custom.create_namespaced_custom_object(*RAY, namespace, plural, body)


def _create_through_webhook(custom: Any, namespace: str, plural: str, body: Json) -> Json:
    """Create once a dry run comes back defaulted: the apiserver takes a moment to call a
    just-registered webhook (the shared hub may have started just now)."""

    def defaulted() -> bool | None:
        answer = custom.create_namespaced_custom_object(
            *RAY, namespace, plural, body, dry_run="All"
        )
        return answer["spec"].get("managedBy") == MANAGED_BY or None

    until(defaulted, f"the hub's webhook defaulting {plural}", 30)
    created: Json = custom.create_namespaced_custom_object(*RAY, namespace, plural, body)
    return created


def _workloads(custom: Any, namespace: str) -> list[Json]:
    return list(
        custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")["items"]
    )


def _workload_of(custom: Any, namespace: str, kind: str, name: str) -> Json | None:
    for workload in _workloads(custom, namespace):
        owners = workload["metadata"].get("ownerReferences") or ()
        if any(o.get("kind") == kind and o.get("name") == name for o in owners):
            return workload
    return None


def _true(obj: Json | None, kind: str) -> Json | None:
    found = condition_of(obj, kind) or {}
    return found if found.get("status") == "True" else None


def _cluster_pods(core: Any, namespace: str, cluster: str) -> list[Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"{CLUSTER_LABEL}={cluster}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _placed(core: Any, namespace: str, cluster: str, count: int) -> Callable[[], list[Any] | None]:
    def probe() -> list[Any] | None:
        pods = _cluster_pods(core, namespace, cluster)
        running = [p for p in pods if p.spec.node_name and p.status.phase == "Running"]
        return running if len(running) == count else None

    return probe


def _gpus_in_use(custom: Any, cluster_queue: str) -> int:
    found = custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", cluster_queue)
    return sum(
        int(str(resource.get("total") or "0"))
        for flavor in (found.get("status") or {}).get("flavorsUsage") or ()
        for resource in flavor.get("resources") or ()
        if resource["name"] == GPU
    )


def _running(rayjob: Json | None) -> Json | None:
    """The RayJob once started and Running in KubeRay (its cluster ready, its submitter
    made); KubeRay names a cluster even while a RayJob created suspended settles."""
    status = (rayjob or {}).get("status") or {}
    started = rayjob is not None and rayjob["spec"].get("suspend") is False
    return rayjob if started and status.get("jobDeploymentStatus") == "Running" else None


def _templates(rayjob: Json) -> list[Json]:
    cluster = rayjob["spec"]["rayClusterSpec"]
    return [
        cluster["headGroupSpec"]["template"],
        *(group["template"] for group in cluster["workerGroupSpecs"]),
        rayjob["spec"]["submitterPodTemplate"],
    ]


# -- single cluster: the hub on worker-1 -----------------------------------------------------
def test_a_preempted_rayjob_is_suspended_restored_and_runs_again(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, cq = gpu_queue
    suffix = namespace.rpartition("-")[2]
    low, high = f"low-{suffix}", f"high-{suffix}"
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        core = client.CoreV1Api(api_client)
        custom.patch_cluster_custom_object(
            GROUP,
            VERSION,
            "clusterqueues",
            cq,
            {"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}},
        )
        for name, value in ((low, 10), (high, 1000)):
            create_kueue_object(
                custom, "workloadpriorityclasses", WorkloadPriorityClass(name, value).obj()
            )
        try:
            # 4 workers of 4 GPUs: all 16 GPUs of the queue. No webhook here: suspended.
            body = kwok_rayjob("train", workers=4, gpus_per_worker=4, run_seconds=600)
            body = body.queue("team").label("kueue.x-k8s.io/priority-class", low).suspend()
            _create_ray(custom, namespace, "rayjobs", body.obj())

            workload = until(
                lambda: _workload_of(custom, namespace, "RayJob", "train"), "its Workload", 30
            )
            pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
            assert pod_sets == [("head", 1), ("workers", 4), ("submitter", 1)]
            started = until(
                lambda: _running(_ray(custom, namespace, "rayjobs", "train")),
                "the RayJob started and KubeRay running it",
                60,
            )
            for template in _templates(started):
                assert template["spec"]["nodeSelector"] == {POOL_LABEL: "gpu"}
            ray_cluster = started["status"]["rayClusterName"]
            pods = until(_placed(core, namespace, ray_cluster, 5), "head and 4 workers running", 60)
            assert all(p.spec.node_name.startswith("worker-1-gpu-") for p in pods)
            # KubeRay's RayCluster is queued with the RayJob, never on its own.
            owners = [
                o["kind"]
                for w in _workloads(custom, namespace)
                for o in w["metadata"]["ownerReferences"]
            ]
            assert owners == ["RayJob"], owners

            urgent = kwok_job("urgent", gpus_per_pod=8, pods=1, run_seconds=1).queue("team")
            client.BatchV1Api(api_client).create_namespaced_job(
                namespace, urgent.priority_class(high).suspend().obj()
            )
            stopped = until(
                lambda: (
                    (j := _ray(custom, namespace, "rayjobs", "train") or {})["spec"].get("suspend")
                    and j
                ),
                "the RayJob suspended by the preemption",
                60,
            )
            for template in _templates(stopped):
                assert template["spec"].get("nodeSelector") in (None, {}), "templates restored"
            evicted = _true(_workload_of(custom, namespace, "RayJob", "train"), "Evicted")
            assert evicted is not None and evicted["reason"] == "Preempted"
            wait_gone(
                lambda: _cluster_pods(core, namespace, ray_cluster) or None,
                "KubeRay removed the preempted cluster's pods",
                60,
            )

            again = until(
                lambda: _running(_ray(custom, namespace, "rayjobs", "train")),
                "the RayJob admitted and running again once the Job is done",
                90,
            )
            for template in _templates(again):
                assert template["spec"]["nodeSelector"] == {POOL_LABEL: "gpu"}
            assert _true(_workload_of(custom, namespace, "RayJob", "train"), "Admitted")
        finally:
            # Deleted here, so the queue's teardown does not wait on a running RayJob.
            with contextlib.suppress(client.ApiException):
                custom.delete_namespaced_custom_object(*RAY, namespace, "rayjobs", "train")
            with contextlib.suppress(AssertionError):
                wait_gone(
                    lambda: _workload_of(custom, namespace, "RayJob", "train"), "its Workload", 20
                )
            for name in (low, high):
                with contextlib.suppress(client.ApiException):
                    custom.delete_cluster_custom_object(
                        GROUP, VERSION, "workloadpriorityclasses", name
                    )


# -- MultiKueue ----------------------------------------------------------------------------
def _admitted(view: ClusterView, kind: str, name: str) -> Callable[[], Json | None]:
    return lambda: (
        found
        if _true(found := _workload_of(view.custom, view.namespace, kind, name), "Admitted")
        else None
    )


def _logs(capsys: pytest.CaptureFixture[str], mk: MultiKueueFleet, namespace: str, job: str) -> str:
    args = ["logs", job, "-n", namespace, "--hub-namespace", mk.hub_namespace]
    code = main([*args, "--kubeconfig", str(mk.fleet.manager.kubeconfig)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_a_rayjob_on_the_manager_runs_on_one_worker_shows_its_logs_and_is_cleaned_up(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mk = multikueue_fleet
    body = kwok_rayjob("train", workers=2, gpus_per_worker=4, run_seconds=6)
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        before = _gpus_in_use(manager.custom, mk.cluster_queue)
        created = _create_through_webhook(
            manager.custom, mk_namespace, "rayjobs", body.queue(mk.spec.local_queue).obj()
        )
        # A batch Job beside it: kwok serves every pod's log, whatever made the pod.
        batch_job = kwok_job("plain", gpus_per_pod=0, pods=1, run_seconds=60)
        manager.create_job(batch_job.queue(mk.spec.local_queue).obj())
        assert created["spec"]["suspend"] is True, "the hub's webhook suspends it on create"
        assert created["spec"]["managedBy"] == MANAGED_BY

        workload = until(_admitted(manager, "RayJob", "train"), "admitted on the manager", 60)
        name, cluster = workload["metadata"]["name"], workload["status"]["clusterName"]
        chosen = mk.worker_by_cluster_name(cluster)
        assert not manager.core.list_namespaced_pod(mk_namespace).items, "nothing runs here"

        with ClusterView.open(chosen, mk_namespace) as worker:
            remote = until(
                lambda: _ray(worker.custom, mk_namespace, "rayjobs", "train"), "the copy", 30
            )
            assert remote["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            assert not remote["spec"].get("managedBy")
            for other in (w for w in mk.workers if w.name != chosen.name):
                with ClusterView.open(other, mk_namespace) as idle:
                    assert _ray(idle.custom, mk_namespace, "rayjobs", "train") is None

            # Status comes back: the manager's RayJob names the worker's cluster.
            local = until(
                lambda: _running(_ray(manager.custom, mk_namespace, "rayjobs", "train")),
                "the worker's Running status on the manager's RayJob",
                60,
            )
            ray_cluster = local["status"]["rayClusterName"]
            pods = until(_placed(worker.core, mk_namespace, ray_cluster, 3), "head and workers", 60)
            assert all(p.spec.node_name.startswith(f"{chosen.name}-gpu-") for p in pods)
            remote_workloads = worker.workloads()
            assert name in [w["metadata"]["name"] for w in remote_workloads]
            owner_kinds = [
                o["kind"]
                for w in remote_workloads
                for o in w["metadata"].get("ownerReferences") or ()
            ]
            assert "RayCluster" not in owner_kinds, "KubeRay's RayCluster is not queued on its own"

            head = next(p for p in pods if p.metadata.labels.get("ray.io/node-type") == "head")
            out = _logs(capsys, mk, mk_namespace, "train")
            first_line = LOG_TEXT.splitlines()[0]
            assert f"[{head.metadata.name}] {first_line}" in out.splitlines(), out
            plain = until(lambda: manager.placement("plain"), "the batch Job placed", 60)
            with ClusterView.open(mk.worker_by_cluster_name(plain), mk_namespace) as there:
                (pod,) = until(lambda: there.scheduled_pods("plain"), "its pod scheduled", 60)
                until(
                    lambda: (
                        there.core.read_namespaced_pod(pod.metadata.name, mk_namespace).status.phase
                        == "Running"
                        or None
                    ),
                    "its pod running",
                    60,
                )
            out = _logs(capsys, mk, mk_namespace, "plain")
            assert f"[{pod.metadata.name}] {first_line}" in out.splitlines(), out

            done = until(
                lambda: _true(manager.workload(name), "Finished"), "Finished on the manager", 120
            )
            assert done["reason"] == "Succeeded"
            local = _ray(manager.custom, mk_namespace, "rayjobs", "train") or {}
            assert local["status"]["jobDeploymentStatus"] == "Complete"
            assert local["status"]["jobStatus"] == "SUCCEEDED"
            until(
                lambda: _gpus_in_use(manager.custom, mk.cluster_queue) == before or None,
                "the manager's GPU quota freed",
                30,
            )
            wait_gone(lambda: worker.workload(name), "the remote Workload removed", 60)
            wait_gone(
                lambda: _ray(worker.custom, mk_namespace, "rayjobs", "train"),
                "the remote RayJob removed",
                60,
            )
            wait_gone(
                lambda: _ray(worker.custom, mk_namespace, "rayclusters", ray_cluster),
                "the worker's RayCluster removed",
                60,
            )


def test_a_raycluster_on_the_manager_runs_on_one_worker_until_deleted(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    gpu_worker = PodTemplate("ray-worker", restart_policy=None).limit(GPU, "4")
    gpu_worker.node_selector({POOL_LABEL: "gpu"})
    body = RayCluster("serve").queue(mk.spec.local_queue).worker_group("gpu", 2, gpu_worker)
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        before = _gpus_in_use(manager.custom, mk.cluster_queue)
        _create_through_webhook(manager.custom, mk_namespace, "rayclusters", body.obj())
        workload = until(_admitted(manager, "RayCluster", "serve"), "admitted", 60)
        name, cluster = workload["metadata"]["name"], workload["status"]["clusterName"]
        chosen = mk.worker_by_cluster_name(cluster)
        with ClusterView.open(chosen, mk_namespace) as worker:
            until(_placed(worker.core, mk_namespace, "serve", 3), "head and workers running", 60)
            until(
                lambda: (
                    (_ray(manager.custom, mk_namespace, "rayclusters", "serve") or {})
                    .get("status", {})
                    .get("state")
                    == "ready"
                    or None
                ),
                "the worker's ready state on the manager's RayCluster",
                60,
            )
            for other in (w for w in mk.workers if w.name != chosen.name):
                with ClusterView.open(other, mk_namespace) as idle:
                    assert _ray(idle.custom, mk_namespace, "rayclusters", "serve") is None
            assert _true(manager.workload(name), "Finished") is None, "it runs until deleted"
            assert _gpus_in_use(manager.custom, mk.cluster_queue) == before + 8, "quota held"

            manager.custom.delete_namespaced_custom_object(
                *RAY, mk_namespace, "rayclusters", "serve"
            )
            wait_gone(
                lambda: _ray(worker.custom, mk_namespace, "rayclusters", "serve"),
                "the worker's RayCluster removed",
                60,
            )
            wait_gone(lambda: worker.workload(name), "the remote Workload removed", 60)
            until(
                lambda: _gpus_in_use(manager.custom, mk.cluster_queue) == before or None,
                "the manager's quota freed once it is deleted",
                30,
            )
