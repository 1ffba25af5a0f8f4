"""Kubeflow TrainJobs end to end, with the real Trainer and JobSet controllers on every cluster.

Trainer builds a JobSet from the TrainJob's runtime (the fleet's kwok ClusterTrainingRuntime,
or a namespaced TrainingRuntime a test makes), JobSet's controller its Jobs, kwok runs
their pods. Over MultiKueue a 3-node x 8-GPU TrainJob submitted on the manager queues as
one Workload with the runtime's pod set, fits only the worker with 32 GPUs and runs there
alone, on the admitted flavor's nodes (the worker's Kueue puts them in the TrainJob's
podSpecOverrides), its status comes back, and the worker's copies go once it is Finished.
On one worker, a high-priority Job preempts a running TrainJob: it is suspended with its
overrides taken back, and once the Job is done it is admitted again and finishes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from devfleet.cluster_access import ClusterAccess
from devfleet.multikueue_fleet import MultiKueueFleet
from tests.builders import (
    GPU,
    kwok_job,
    kwok_training_runtime,
    kwok_trainjob,
)
from tests.e2e.multikueue_fixtures import (
    ORIGIN_LABEL,
    ClusterView,
    condition_of,
    until,
    wait_gone,
)
from tests.e2e.priority_classes import workload_priority_classes

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
MANAGED_BY = "kueue.x-k8s.io/multikueue"
TRAINER_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
OVERRIDE_INDEX = "kueue.x-k8s.io/override-idx"
POOL_LABEL = "fleetq.dev/node-pool"


def _trainjob(view: ClusterView, name: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = view._maybe(
        lambda: view.custom.get_namespaced_custom_object(
            *TRAINER, view.namespace, "trainjobs", name
        )
    )
    return found


def _create(view: ClusterView, plural: str, body: dict[str, Any]) -> None:
    view.custom.create_namespaced_custom_object(*TRAINER, view.namespace, plural, body)


def _workload_of(view: ClusterView, name: str) -> dict[str, Any] | None:
    for workload in view.workloads():
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "TrainJob" and o.get("name") == name for o in owners):
            return workload
    return None


def _pods(view: ClusterView, name: str) -> list[Any]:
    return list(
        view.core.list_namespaced_pod(
            view.namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}"
        ).items
    )


def _true(obj: dict[str, Any] | None, condition: str) -> bool:
    return (condition_of(obj, condition) or {}).get("status") == "True"


def _gpus_in_use(view: ClusterView, cluster_queue: str) -> int:
    status = (view.cluster_object("clusterqueues", cluster_queue) or {}).get("status") or {}
    total = 0
    for flavor in status.get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            if resource.get("name") == GPU:
                total += int(str(resource.get("total", "0")))
    return total


def test_a_trainjob_submitted_on_the_manager_runs_on_the_one_worker_with_room(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> None:
    mk = multikueue_fleet
    body = kwok_trainjob("llm", nodes=3, gpus_per_node=8).queue(mk.spec.local_queue).obj()
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        _create(manager, "trainjobs", body)
        created = _trainjob(manager, "llm") or {}
        assert created["spec"]["suspend"] is True, "the hub's webhook suspends it on create"
        assert created["spec"]["managedBy"] == MANAGED_BY

        workload = until(lambda: _workload_of(manager, "llm"), "the TrainJob's Workload", 30)
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 3)]
        node = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
        assert node["resources"]["limits"] == {GPU: "8"}, "resourcesPerNode of the TrainJob"

        def admitted() -> dict[str, Any] | None:
            found = _workload_of(manager, "llm")
            return found if _true(found, "Admitted") else None

        workload = until(admitted, "the manager Workload admitted", timeout=60)
        name = workload["metadata"]["name"]
        chosen = mk.worker_by_cluster_name(workload["status"]["clusterName"])
        assert chosen.name == "worker-1", "only worker-1 has 24 free GPUs"
        others = [w for w in mk.workers if w.name != chosen.name]

        with ClusterView.open(chosen, mk_namespace) as worker:
            remote = until(lambda: _trainjob(worker, "llm"), "the remote TrainJob", timeout=30)
            assert remote["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            # Without managedBy: Trainer's CRD defaults it to Trainer's own controller.
            assert remote["spec"].get("managedBy") == TRAINER_CONTROLLER

            def pods_placed() -> list[Any] | None:
                pods = _pods(worker, "llm")
                return pods if len(pods) == 3 and all(p.spec.node_name for p in pods) else None

            pods = until(pods_placed, "three training nodes scheduled", timeout=90)
            assert all(p.spec.node_name.startswith(f"{chosen.name}-gpu-") for p in pods)
            assert all((p.spec.node_selector or {}).get(POOL_LABEL) == "gpu" for p in pods)
            started = _trainjob(worker, "llm") or {}
            assert started["metadata"]["annotations"][OVERRIDE_INDEX] == "0"
            assert started["spec"]["podSpecOverrides"][0]["nodeSelector"] == {POOL_LABEL: "gpu"}
            assert not _pods(manager, "llm"), "nothing runs on the manager"
            for other in others:
                with ClusterView.open(other, mk_namespace) as idle:
                    assert _trainjob(idle, "llm") is None and idle.workload(name) is None

            def finished() -> dict[str, Any] | None:
                found = manager.workload(name)
                return found if _true(found, "Finished") else None

            done = until(finished, "the manager Workload Finished", timeout=120)
            assert (condition_of(done, "Finished") or {}).get("reason") == "Succeeded"
            assert _true(_trainjob(manager, "llm"), "Complete"), "its status came back"
            assert _gpus_in_use(manager, mk.cluster_queue) == 0, "its quota is free"

            wait_gone(lambda: worker.workload(name), "the remote Workload removed", timeout=60)
            wait_gone(lambda: _trainjob(worker, "llm"), "the remote TrainJob removed", timeout=60)


@contextlib.contextmanager
def _priority_classes(member: ClusterAccess, classes: dict[str, int]) -> Iterator[None]:
    from kubernetes import client

    with (
        member.api_client() as api_client,
        workload_priority_classes(client.CustomObjectsApi(api_client), classes),
    ):
        yield


@pytest.fixture
def worker_2(multikueue_fleet: MultiKueueFleet) -> ClusterAccess:
    return next(w for w in multikueue_fleet.workers if w.name == "worker-2")


def test_a_preempted_trainjob_is_suspended_and_restored_then_runs_again(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str, worker_2: ClusterAccess
) -> None:
    """On worker-2 (two 8-GPU nodes) the worker's own Kueue queues both jobs."""
    queue = multikueue_fleet.spec.local_queue
    low, high = f"{mk_namespace}-low", f"{mk_namespace}-high"
    runtime = kwok_training_runtime("slow", run_seconds=8, namespaced=True).obj()
    trainjob = (
        kwok_trainjob(
            "train", nodes=2, gpus_per_node=8, runtime="slow", runtime_kind="TrainingRuntime"
        )
        .queue(queue)
        .priority_class(low)
        .suspend()
        .obj()
    )
    urgent = kwok_job("urgent", gpus_per_pod=8, pods=1, run_seconds=2)
    urgent = urgent.queue(queue).priority_class(high).suspend().obj()
    with (
        _priority_classes(worker_2, {low: 10, high: 1000}),
        ClusterView.open(worker_2, mk_namespace) as worker,
    ):
        _create(worker, "trainingruntimes", runtime)
        _create(worker, "trainjobs", trainjob)

        def running() -> list[Any] | None:
            pods = [p for p in _pods(worker, "train") if p.status.phase == "Running"]
            return pods if len(pods) == 2 else None

        until(running, "both training nodes running", timeout=60)
        worker.create_job(urgent)

        def preempted() -> dict[str, Any] | None:
            found = _workload_of(worker, "train")
            evicted = condition_of(found, "Evicted") or {}
            return found if evicted.get("reason") == "Preempted" else None

        until(preempted, "the TrainJob's Workload preempted", timeout=30)

        def restored() -> dict[str, Any] | None:
            found = _trainjob(worker, "train") or {}
            annotations = found["metadata"].get("annotations") or {}
            back = found["spec"].get("suspend") is True and OVERRIDE_INDEX not in annotations
            return found if back and "podSpecOverrides" not in found["spec"] else None

        until(restored, "the TrainJob suspended, Kueue's overrides taken back", timeout=30)
        until(
            lambda: worker.job_workload_is("urgent", "Finished") or None,
            "the urgent Job finished",
            timeout=60,
        )

        def rerun() -> dict[str, Any] | None:
            found = _trainjob(worker, "train") or {}
            annotations = found["metadata"].get("annotations") or {}
            again = found["spec"].get("suspend") is False and OVERRIDE_INDEX in annotations
            return found if again else None

        until(rerun, "the TrainJob admitted and started again", timeout=60)
        until(
            lambda: _true(_workload_of(worker, "train"), "Finished") or None,
            "the TrainJob finished after its second start",
            timeout=60,
        )
        finished = _workload_of(worker, "train")
        assert (condition_of(finished, "Finished") or {}).get("reason") == "Succeeded"
