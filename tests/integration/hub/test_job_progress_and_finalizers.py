"""What a Job's later life tells the hub (an edit while queued, succeeded pods, ready pods),
and the resource-in-use finalizers that hold a queue or flavor while it is in use."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from core.kube.client import PatchType
from core.kube.resources import JOBS
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection, WaitForPodsReady
from integrations.framework.labels import RESOURCE_IN_USE_FINALIZER as FINALIZER

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _admitted(cluster: Any, job: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    return workload if workload is not None and cluster.is_true(workload, "Admitted") else None


async def _patch_job(cluster: Any, name: str, patch: dict[str, Any], status: bool = False) -> None:
    await cluster.client.patch(
        JOBS,
        name,
        patch,
        patch_type=PatchType.MERGE,
        namespace=cluster.namespace,
        subresource="status" if status else None,
    )


async def test_editing_a_queued_job_updates_its_workload_which_then_fits(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("edit", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("big", lq, cpu="5")
    before = await cluster.eventually(lambda: cluster.job_workload("big"), what="workload")
    await cluster.eventually(lambda: _pending(cluster, "big"), what="big pending")

    job = await cluster.get(JOBS, "big")
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "1"
    await _patch_job(cluster, "big", {"spec": {"template": job["spec"]["template"]}})

    after = await cluster.eventually(lambda: _admitted(cluster, "big"), what="edited job admitted")
    # Updated in place (upstream's rule for a suspended Job whose Workload holds no quota).
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    requests = after["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    assert requests["requests"]["cpu"] == "1"


async def _pending(cluster: Any, job: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    reserved = cluster.condition(workload or {}, "QuotaReserved")
    return reserved if reserved and reserved["status"] == "False" else None


async def test_succeeded_pods_release_their_quota_to_the_next_job(hubs: Any, cluster: Any) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("reclaim", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("wide", lq, cpu="1", parallelism=2)
    await cluster.eventually(lambda: _admitted(cluster, "wide"), what="wide admitted")
    await cluster.job("next", lq, cpu="1")
    await cluster.eventually(lambda: _pending(cluster, "next"), what="next pending")

    # One of two pods succeeded and one completion is left: one pod's quota is free.
    await _patch_job(cluster, "wide", {"status": {"succeeded": 1}}, status=True)
    await cluster.eventually(lambda: _admitted(cluster, "next"), what="next admitted")

    # The engine frees the quota at once; the Workload's status write follows it.
    async def reclaimable() -> list[Any] | None:
        wide = await cluster.job_workload("wide") or {}
        return wide.get("status", {}).get("reclaimablePods")

    recorded = await cluster.eventually(reclaimable, what="wide's reclaimablePods written")
    assert recorded == [{"name": "main", "count": 1}]


async def test_ready_pods_make_the_workload_pods_ready(hubs: Any, cluster: Any) -> None:
    configuration = dataclasses.replace(
        Configuration(),
        leader_election=LeaderElection(leader_elect=False),
        wait_for_pods_ready=WaitForPodsReady(timeout_seconds=300.0),
    )
    await hubs.start(configuration)
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("ready", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("pods", lq)
    admitted = await cluster.eventually(lambda: _admitted(cluster, "pods"), what="admitted")
    waiting = cluster.condition(admitted, "PodsReady") or {}
    assert (waiting.get("status"), waiting.get("reason")) == ("False", "WaitForStart")

    await _patch_job(cluster, "pods", {"status": {"ready": 1, "active": 1}}, status=True)

    async def ready() -> dict[str, Any] | None:
        workload = await cluster.job_workload("pods") or {}
        found = cluster.condition(workload, "PodsReady")
        return found if found and found["status"] == "True" else None

    found = await cluster.eventually(ready, what="PodsReady")
    assert found["reason"] == "Started"


async def test_a_queue_in_use_is_deleted_only_once_it_is_empty(hubs: Any, cluster: Any) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("doomed", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("holder", lq)

    async def holder_admitted() -> dict[str, Any] | None:
        workload = await cluster.get(kinds.WORKLOADS, "holder")
        return workload if workload and cluster.is_true(workload, "Admitted") else None

    await cluster.eventually(holder_admitted, what="holder admitted")
    await cluster.eventually(
        lambda: _has_finalizer(cluster, kinds.RESOURCE_FLAVORS, flavor), what="RF"
    )
    await cluster.eventually(lambda: _has_finalizer(cluster, kinds.CLUSTER_QUEUES, cq), what="CQ")

    await cluster.client.delete(kinds.CLUSTER_QUEUES, cq)
    await cluster.client.delete(kinds.RESOURCE_FLAVORS, flavor)
    # Both stay while the workload holds quota (and the queue names the flavor).
    held = await cluster.get(kinds.CLUSTER_QUEUES, cq)
    assert held is not None and held["metadata"].get("deletionTimestamp")
    await cluster.workload("late", lq)

    async def told_terminating() -> dict[str, Any] | None:
        late = await cluster.get(kinds.WORKLOADS, "late")
        reserved = cluster.condition(late or {}, "QuotaReserved")
        return reserved if reserved and "inactive" in reserved.get("message", "") else None

    await cluster.eventually(told_terminating, what="new workload told the queue is inactive")

    async def queue_terminating() -> dict[str, Any] | None:
        # As upstream's clusterqueue_controller: the held queue's status goes on.
        held = await cluster.get(kinds.CLUSTER_QUEUES, cq) or {}
        active = cluster.condition(held, "Active") or {}
        counted = (held.get("status") or {}).get("pendingWorkloads") == 1  # "late" too
        return held if active.get("reason") == "Terminating" and counted else None

    held = await cluster.eventually(queue_terminating, what="ClusterQueue Active=Terminating")
    active = cluster.condition(held, "Active") or {}
    assert (active["status"], active["message"]) == (
        "False",
        "Can't admit new workloads; clusterQueue is terminating",
    )
    assert held["status"]["reservingWorkloads"] == 1
    assert await cluster.get(kinds.CLUSTER_QUEUES, cq) is not None
    assert await cluster.get(kinds.RESOURCE_FLAVORS, flavor) is not None

    await cluster.client.delete(kinds.WORKLOADS, "holder", namespace=cluster.namespace)
    await cluster.eventually(lambda: _gone(cluster, kinds.CLUSTER_QUEUES, cq), what="CQ deleted")
    await cluster.eventually(lambda: _gone(cluster, kinds.RESOURCE_FLAVORS, flavor), what="RF gone")


async def _has_finalizer(cluster: Any, resource: Any, name: str) -> bool:
    obj = await cluster.get(resource, name) or {}
    return FINALIZER in ((obj.get("metadata") or {}).get("finalizers") or [])


async def _gone(cluster: Any, resource: Any, name: str) -> bool:
    return await cluster.get(resource, name) is None
