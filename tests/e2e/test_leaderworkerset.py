"""LeaderWorkerSets queued by `fleetq hub` with its webhooks, on worker-1, with the real
LWS controller (every full fleet runs it) creating the groups' StatefulSets and Pods.

The hub is test_pods.py's (its `pods_hub` and `pod_queue` fixtures; the hub enables the
`leaderworkerset.x-k8s.io/leaderworkerset` framework there). kwok runs the Pods the real
scheduler places on its nodes until they are deleted.
- an LWS of 2 groups of size 3 (a leader and 2 workers) is queued as 2 Workloads with
  upstream's names and pod sets `leader` 1 / `worker` 2; each group's Pods are gated, then
  ungated on the flavor's nodes once its Workload is admitted; the 6 GPUs are held while
  it runs and freed when it is deleted;
- scaled up beyond the quota, the new group waits: its Workload is not admitted and its
  Pods stay gated while the first group runs; scaled back down, the waiting group's
  Workload goes and the running group keeps its quota; scaled to zero, all is freed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from devfleet.polling import until
from integrations.leaderworkerset.groups import group_workload_name
from tests.builders import LeaderWorkerSet
from tests.e2e.gpu_queue import GPU, POOL_LABEL
from tests.e2e.test_pods import (
    GROUP,
    VERSION,
    PodsHub,
    QueueFactory,
    _condition,
    _gated,
    _gpus_in_use,
    pod_queue,
    pods_hub,
)

__all__ = ["pod_queue", "pods_hub"]

LWS_GROUP, LWS_VERSION, LWS_PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
Json = dict[str, Any]


def _submit(custom: Any, namespace: str, name: str, *, replicas: int, size: int) -> Json:
    body = (
        LeaderWorkerSet(name, replicas=replicas, size=size)
        .queue("team")
        .requests({"cpu": "1", "memory": "1Gi"})
        .limit(GPU, "1")
        .leader()
        .obj()
    )
    created: Json = custom.create_namespaced_custom_object(
        LWS_GROUP, LWS_VERSION, namespace, LWS_PLURAL, body
    )
    return created


def _scale(custom: Any, namespace: str, name: str, replicas: int) -> None:
    custom.patch_namespaced_custom_object(
        LWS_GROUP, LWS_VERSION, namespace, LWS_PLURAL, name, {"spec": {"replicas": replicas}}
    )


def _workloads_of(custom: Any, namespace: str, lws: str) -> dict[str, Json]:
    """The Workloads the LeaderWorkerSet `lws` controls, by name."""
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
    out = {}
    for workload in listed["items"]:
        owners = workload["metadata"].get("ownerReferences") or ()
        if any(o["kind"] == "LeaderWorkerSet" and o["name"] == lws for o in owners):
            out[workload["metadata"]["name"]] = dict(workload)
    return out


def _group_pods(core: Any, namespace: str, lws: str, index: int) -> list[Any]:
    selector = f"{SET_NAME_LABEL}={lws},{GROUP_INDEX_LABEL}={index}"
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _running_group(core: Any, namespace: str, lws: str, index: int, size: int) -> list[Any]:
    """The group's `size` Pods once all are ungated and bound to a node (else [])."""
    pods = _group_pods(core, namespace, lws, index)
    placed = [p for p in pods if p.spec.node_name and not _gated(p)]
    return placed if len(placed) == size else []


def _group_running(core: Any, namespace: str, lws: str, index: int) -> Callable[[], list[Any]]:
    return lambda: _running_group(core, namespace, lws, index, 3)


def _marked_group(core: Any, namespace: str, lws: str, index: int, workload: str) -> list[Any]:
    """The group's 3 Pods once each is marked a member of the pod group `workload`."""
    pods = _group_pods(core, namespace, lws, index)
    marked = [p for p in pods if (p.metadata.labels or {}).get(POD_GROUP_LABEL) == workload]
    return marked if len(marked) == 3 else []


def _workload_count(custom: Any, namespace: str, lws: str, count: int) -> dict[str, Json]:
    found = _workloads_of(custom, namespace, lws)
    return found if len(found) == count else {}


@pytest.fixture
def lws_queue(pods_hub: PodsHub, pod_queue: QueueFactory) -> Iterator[QueueFactory]:
    """`pod_queue`, with the LeaderWorkerSets left in its namespaces deleted first (while
    the hub runs, so their Workloads go with them)."""
    made: list[str] = []

    def make(gpus: int) -> str:
        made.append(pod_queue(gpus))
        return made[-1]

    yield make
    with pods_hub.worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        for namespace in made:
            with contextlib.suppress(client.ApiException):
                custom.delete_collection_namespaced_custom_object(
                    LWS_GROUP, LWS_VERSION, namespace, LWS_PLURAL
                )


def test_an_lws_of_two_groups_is_two_workloads_admitted_group_by_group_and_freed_on_delete(
    pods_hub: PodsHub, lws_queue: QueueFactory
) -> None:
    namespace = lws_queue(6)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        lws = _submit(custom, namespace, "serve", replicas=2, size=3)
        labels = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "team", "the webhook marked the template"
        expected = {group_workload_name(lws, i): i for i in range(2)}

        workloads = until(
            lambda: _workload_count(custom, namespace, "serve", 2) or None,
            "two Workloads, one per group",
            30,
        )
        assert set(workloads) == set(expected)
        for workload in workloads.values():
            pod_sets = [(p["name"], p["count"]) for p in workload["spec"]["podSets"]]
            assert pod_sets == [("leader", 1), ("worker", 2)]
            assert workload["spec"]["queueName"] == "team"

        for name, index in expected.items():
            pods = until(
                _group_running(core, namespace, "serve", index),
                f"group {index}: its 3 Pods ungated and scheduled",
                120,
            )
            assert all(p.metadata.labels[POD_GROUP_LABEL] == name for p in pods)
            assert all(p.spec.node_selector == {POOL_LABEL: "gpu"} for p in pods)
            assert all(p.spec.node_name.startswith("worker-1-gpu-") for p in pods)
            roles = sorted(p.metadata.annotations["kueue.x-k8s.io/role-hash"] for p in pods)
            assert roles == ["leader", "worker", "worker"]
            assert _condition(_workloads_of(custom, namespace, "serve")[name], "Admitted")
        until(lambda: _gpus_in_use(custom, namespace) == 6 or None, "6 GPUs held", 30)

        custom.delete_namespaced_custom_object(
            LWS_GROUP, LWS_VERSION, namespace, LWS_PLURAL, "serve"
        )
        until(lambda: _gpus_in_use(custom, namespace) == 0 or None, "deleted: freed", 60)
        until(
            lambda: not _workloads_of(custom, namespace, "serve") or None,
            "the groups' Workloads gone",
            60,
        )


def test_a_group_beyond_the_quota_waits_gated_and_scaling_down_frees_quota(
    pods_hub: PodsHub, lws_queue: QueueFactory
) -> None:
    namespace = lws_queue(4)
    with pods_hub.worker.api_client() as api_client:
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        lws = _submit(custom, namespace, "grow", replicas=1, size=3)
        until(
            lambda: _running_group(core, namespace, "grow", 0, 3) or None,
            "group 0 running",
            120,
        )
        until(lambda: _gpus_in_use(custom, namespace) == 3 or None, "3 GPUs held", 30)

        _scale(custom, namespace, "grow", 2)
        second = group_workload_name(lws, 1)
        until(
            lambda: second in _workloads_of(custom, namespace, "grow") or None,
            "the new group's Workload",
            30,
        )
        waiting = until(
            lambda: _marked_group(core, namespace, "grow", 1, second) or None,
            "the new group's 3 Pods created and marked as its pod group",
            60,
        )
        assert all(_gated(p) and not p.spec.node_name for p in waiting), "it does not fit: gated"
        workload = _workloads_of(custom, namespace, "grow")[second]
        assert _condition(workload, "QuotaReserved") is None
        assert _gpus_in_use(custom, namespace) == 3, "the waiting group holds no quota"

        _scale(custom, namespace, "grow", 1)
        until(
            lambda: second not in _workloads_of(custom, namespace, "grow") or None,
            "scaled back: the waiting group's Workload deleted",
            60,
        )
        until(
            lambda: not _group_pods(core, namespace, "grow", 1) or None,
            "and its Pods gone",
            60,
        )
        assert len(_running_group(core, namespace, "grow", 0, 3)) == 3
        assert _gpus_in_use(custom, namespace) == 3

        _scale(custom, namespace, "grow", 0)
        until(lambda: _gpus_in_use(custom, namespace) == 0 or None, "scaled to 0: freed", 60)
        assert _workloads_of(custom, namespace, "grow") == {}
