"""MultiKueue end to end for the kinds without managedBy: a Pod, a pod group, a
StatefulSet and a LeaderWorkerSet created on the manager run on a worker.

A MultiKueue fleet of its own (the shared one does not enable these frameworks): the hub
on the API-only manager with `pod`, `statefulset` and `leaderworkerset` enabled, agents on
both full workers (they manage every kind). As upstream v0.19.2's adapters:
- a queued Pod stays gated on the manager; a copy of it runs on the worker its Workload
  was admitted on; the worker Pod's status comes back to the manager's Pod until it
  Succeeded (the test plays the worker's kubelet for that: kwok finishes only Jobs'
  Pods), the manager Workload finishes and the copies are gone;
- a pod group of 2 is dispatched together: both Pods are copied to one worker and run;
- a StatefulSet and a LeaderWorkerSet are copied whole to a worker, admitted there and
  run; deleted on the manager, their copies and Workloads go from the worker.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.multikueue_fleet import MultiKueueFleet, MultiKueueFleetSpec
from tests.builders import LeaderWorkerSet, StatefulSet, kwok_pod
from tests.e2e.multikueue_fixtures import (
    FRAMEWORKS,
    ORIGIN_LABEL,
    ClusterView,
    condition_of,
    until,
    wait_gone,
)

GATE = "kueue.x-k8s.io/admission"
GPU = "nvidia.com/gpu"
ORIGIN_UID = "kueue.x-k8s.io/multikueue-origin-uid"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
Json = dict[str, Any]


FRAMEWORK_LWS = "leaderworkerset.x-k8s.io/leaderworkerset"


@pytest.fixture(scope="module")
def pods_mk(
    full_fleet: RunningFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MultiKueueFleet]:
    """A MultiKueue fleet whose hub dispatches Pods, StatefulSets and LeaderWorkerSets."""
    name = f"mkp{os.getpid() % 10000}"
    spec = MultiKueueFleetSpec(
        workdir=Path(tmp_path_factory.mktemp("multikueue-pods")) / name,
        name=name,
        hub_configuration={
            "integrations": {
                "frameworks": [*FRAMEWORKS, "pod", "statefulset", FRAMEWORK_LWS],
            },
            "multiKueue": {"gcInterval": "5s"},
        },
        manager_quota={"cpu": "2000", "memory": "20Ti", GPU: "400"},
    )
    with MultiKueueFleet(full_fleet, spec, progress=print) as mk:
        yield mk


@pytest.fixture
def namespace(pods_mk: MultiKueueFleet) -> Iterator[str]:
    """A namespace that dispatches; the Pods, StatefulSets and LWSs left are deleted on
    the manager first, while the hub runs, so their Workloads and copies go with them."""
    name = f"mkp-{uuid.uuid4().hex[:8]}"
    pods_mk.add_namespace(name)
    # No controller-manager on the API-only manager: its ServiceAccount controller never
    # makes the namespace's `default` account that a Pod is admitted with.
    with (
        pods_mk.fleet.manager.api_client() as api_client,
        contextlib.suppress(client.ApiException),
    ):
        client.CoreV1Api(api_client).create_namespaced_service_account(
            name, {"metadata": {"name": "default"}}
        )
    yield name
    with pods_mk.fleet.manager.api_client() as api_client:
        core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        with contextlib.suppress(client.ApiException):
            custom.delete_collection_namespaced_custom_object(*LWS[:2], name, LWS[2])
        with contextlib.suppress(client.ApiException):
            apps.delete_collection_namespaced_stateful_set(name)
        with contextlib.suppress(client.ApiException):
            core.delete_collection_namespaced_pod(name)
        until(lambda: not core.list_namespaced_pod(name).items, "manager Pods gone", 60)
    pods_mk.remove_namespace(name)


def _pod(view: ClusterView, name: str) -> Json | None:
    return view._maybe(
        lambda: view.api_client.sanitize_for_serialization(
            view.core.read_namespaced_pod(name, view.namespace)
        )
    )


def _gated(pod: Json | None) -> bool:
    gates = ((pod or {}).get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == GATE for g in gates)


def _admitted(view: ClusterView, name: str) -> Json | None:
    workload = view.workload(name)
    return workload if (condition_of(workload, "Admitted") or {}).get("status") == "True" else None


def _workload_named(view: ClusterView, prefix: str) -> Json | None:
    return next(
        (w for w in view.workloads() if w["metadata"]["name"].startswith(prefix)),
        None,
    )


def _worker(mk: MultiKueueFleet, workload: Json) -> ClusterAccess:
    return mk.worker_by_cluster_name(workload["status"]["clusterName"])


def _finish(view: ClusterView, name: str) -> None:
    """Play the worker's kubelet once kwok runs the Pod: its containers exited 0 (kwok
    finishes only the Pods of Jobs)."""

    def running() -> bool:
        pod = _pod(view, name) or {}
        return (pod.get("status") or {}).get("phase") == "Running"

    until(running, f"{name} running on the worker", 60)
    view.core.patch_namespaced_pod_status(name, view.namespace, {"status": {"phase": "Succeeded"}})


def _create_pod(view: ClusterView, pod: Json) -> None:
    view.core.create_namespaced_pod(view.namespace, pod)


def test_a_queued_pod_runs_on_a_worker_and_its_status_comes_back(
    pods_mk: MultiKueueFleet, namespace: str
) -> None:
    mk = pods_mk
    pod = kwok_pod("infer", gpus=1).queue(mk.spec.local_queue).obj()
    with ClusterView.open(mk.fleet.manager, namespace) as manager:
        _create_pod(manager, pod)
        created = _pod(manager, "infer")
        assert _gated(created), "the webhook holds it back on the manager"
        workload = until(
            lambda: (
                (w := _workload_named(manager, "pod-infer-"))
                and _admitted(manager, w["metadata"]["name"])
            ),
            "the Pod's Workload admitted on the manager",
            timeout=60,
        )
        name = workload["metadata"]["name"]
        worker = _worker(mk, workload)
        with ClusterView.open(worker, namespace) as remote:
            copy = until(lambda: _pod(remote, "infer"), "the Pod's copy on the worker", 30)
            labels = copy["metadata"]["labels"]
            assert labels[ORIGIN_LABEL] == mk.origin
            assert labels[PREBUILT] == name
            placed = until(
                lambda: (p := _pod(remote, "infer")) and p["spec"].get("nodeName") and p,
                "the copy ungated and placed on a worker node",
                60,
            )
            assert not _gated(placed)
            assert placed["spec"]["nodeName"].startswith(f"{worker.name}-")

            # The manager's Pod never leaves its gate, yet shows the worker Pod's life.
            def running_here() -> Json | None:
                local = _pod(manager, "infer")
                phase = ((local or {}).get("status") or {}).get("phase")
                return local if phase in ("Running", "Succeeded") else None

            until(running_here, "the worker Pod's Running copied to the manager Pod", 60)

            def succeeded_here() -> Json | None:
                local = _pod(manager, "infer")
                phase = ((local or {}).get("status") or {}).get("phase")
                return local if phase == "Succeeded" else None

            _finish(remote, "infer")
            local = until(succeeded_here, "the worker's Succeeded copied to the manager Pod", 60)
            assert _gated(local) and not local["spec"].get("nodeName")
            finished = until(
                lambda: (
                    (w := manager.workload(name))
                    and (condition_of(w, "Finished") or {}).get("status") == "True"
                    and w
                ),
                "the manager Workload Finished",
                60,
            )
            assert (condition_of(finished, "Finished") or {}).get("reason") == "Succeeded"
            wait_gone(lambda: _pod(remote, "infer"), "the Pod's copy removed from the worker")
            wait_gone(lambda: remote.workload(name), "the Workload's copy removed", 60)
        # Finished, it holds no finalizer: deleted, it is gone at once.
        manager.core.delete_namespaced_pod("infer", namespace)
        wait_gone(lambda: _pod(manager, "infer"), "the finished manager Pod deleted", 30)


def test_a_pod_group_of_two_is_dispatched_together_and_runs_on_one_worker(
    pods_mk: MultiKueueFleet, namespace: str
) -> None:
    mk = pods_mk
    with ClusterView.open(mk.fleet.manager, namespace) as manager:
        for member in ("g-a", "g-b"):
            pod = kwok_pod(member, gpus=1).queue(mk.spec.local_queue)
            _create_pod(manager, pod.group("pair", 2).obj())
        workload = until(lambda: _admitted(manager, "pair"), "the group's Workload admitted", 60)
        assert [ps["count"] for ps in workload["spec"]["podSets"]] == [2]
        worker = _worker(mk, workload)
        others = [w for w in mk.workers if w.name != worker.name]
        with ClusterView.open(worker, namespace) as remote:

            def both_placed() -> list[Json] | None:
                pods = [_pod(remote, n) for n in ("g-a", "g-b")]
                placed = [p for p in pods if p and p["spec"].get("nodeName") and not _gated(p)]
                return placed if len(placed) == 2 else None

            copies = until(both_placed, "both Pods of the group running on one worker", 60)
            assert {p["metadata"]["labels"][ORIGIN_LABEL] for p in copies} == {mk.origin}
            for member in ("g-a", "g-b"):
                _finish(remote, member)
        for other in others:
            with ClusterView.open(other, namespace) as elsewhere:
                assert _pod(elsewhere, "g-a") is None and _pod(elsewhere, "g-b") is None
        for member in ("g-a", "g-b"):
            assert _gated(_pod(manager, member)), "the manager's Pods stay gated"
        until(
            lambda: (
                (w := manager.workload("pair"))
                and (condition_of(w, "Finished") or {}).get("status") == "True"
            ),
            "the group finished once both Pods succeeded on the worker",
            90,
        )


def _statefulset(mk: MultiKueueFleet, name: str, replicas: int) -> Json:
    builder = StatefulSet(name, replicas=replicas).queue(mk.spec.local_queue)
    return builder.requests({"cpu": "1", "memory": "1Gi"}).limit(GPU, "1").obj()


def test_a_statefulset_is_copied_whole_runs_on_a_worker_and_goes_when_deleted(
    pods_mk: MultiKueueFleet, namespace: str
) -> None:
    mk = pods_mk
    with ClusterView.open(mk.fleet.manager, namespace) as manager:
        apps = client.AppsV1Api(manager.api_client)
        created = apps.create_namespaced_stateful_set(namespace, _statefulset(mk, "web", 2))
        uid = created.metadata.uid
        workload = until(
            lambda: (
                (w := _workload_named(manager, "statefulset-web-"))
                and _admitted(manager, w["metadata"]["name"])
            ),
            "the StatefulSet's Workload admitted on the manager",
            60,
        )
        name = workload["metadata"]["name"]
        worker = _worker(mk, workload)
        with ClusterView.open(worker, namespace) as remote:
            remote_apps = client.AppsV1Api(remote.api_client)

            def copy() -> Json | None:
                found = remote._maybe(
                    lambda: remote_apps.read_namespaced_stateful_set("web", namespace)
                )
                return (
                    None if found is None else remote.api_client.sanitize_for_serialization(found)
                )

            sts = until(copy, "the StatefulSet's copy on the worker", 30)
            assert sts["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            assert sts["metadata"]["annotations"][ORIGIN_UID] == uid
            assert _admitted(remote, name) is not None, "the worker admitted the same Workload"

            def running() -> list[Any] | None:
                pods = remote.core.list_namespaced_pod(namespace, label_selector="app=web").items
                placed = [p for p in pods if p.spec.node_name and not p.spec.scheduling_gates]
                return placed if len(placed) == 2 else None

            until(running, "both replicas running on the worker", 90)
            apps.delete_namespaced_stateful_set("web", namespace)
            wait_gone(lambda: manager.workload(name), "the manager Workload deleted", 60)
            wait_gone(copy, "the StatefulSet's copy removed from the worker", 60)
            wait_gone(lambda: remote.workload(name), "the Workload's copy removed", 60)


def test_a_leaderworkerset_is_copied_whole_runs_on_a_worker_and_goes_when_deleted(
    pods_mk: MultiKueueFleet, namespace: str
) -> None:
    mk = pods_mk
    body = (
        LeaderWorkerSet("serve", replicas=1, size=2)
        .queue(mk.spec.local_queue)
        .requests({"cpu": "1", "memory": "1Gi"})
        .limit(GPU, "1")
        .leader()
        .obj()
    )
    with ClusterView.open(mk.fleet.manager, namespace) as manager:
        created = manager.custom.create_namespaced_custom_object(*LWS[:2], namespace, LWS[2], body)
        uid = created["metadata"]["uid"]
        workload = until(
            lambda: (
                (w := _workload_named(manager, "leaderworkerset-serve-0-"))
                and _admitted(manager, w["metadata"]["name"])
            ),
            "the LWS group's Workload admitted on the manager",
            60,
        )
        name = workload["metadata"]["name"]
        assert [ps["name"] for ps in workload["spec"]["podSets"]] == ["leader", "worker"]
        worker = _worker(mk, workload)
        with ClusterView.open(worker, namespace) as remote:

            def copy() -> Json | None:
                return remote._maybe(
                    lambda: remote.custom.get_namespaced_custom_object(
                        *LWS[:2], namespace, LWS[2], "serve"
                    )
                )

            lws = until(copy, "the LeaderWorkerSet's copy on the worker", 30)
            assert lws["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
            assert lws["metadata"]["annotations"][ORIGIN_UID] == uid
            assert _admitted(remote, name) is not None, "the worker admitted the same Workload"

            def running() -> list[Any] | None:
                selector = f"{LWS_NAME_LABEL}=serve"
                pods = remote.core.list_namespaced_pod(namespace, label_selector=selector).items
                placed = [p for p in pods if p.spec.node_name and not p.spec.scheduling_gates]
                return placed if len(placed) == 2 else None

            until(running, "the leader and its worker running on the worker cluster", 90)
            manager.custom.delete_namespaced_custom_object(*LWS[:2], namespace, LWS[2], "serve")
            wait_gone(lambda: manager.workload(name), "the manager Workload deleted", 60)
            wait_gone(copy, "the LeaderWorkerSet's copy removed from the worker", 60)
            wait_gone(lambda: remote.workload(name), "the Workload's copy removed", 60)
