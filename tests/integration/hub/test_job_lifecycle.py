"""A queued batch/v1 Job through the hub on a real apiserver: Workload, admission, start on
the flavor's nodes, completion, quota handed to the next Job; and priority preemption."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.kube.errors import Conflict
from core.kube.resources import JOBS
from core.manager import watched_kinds as kinds
from core.manager.job_actions import JobActions
from integrations.batch_job.kind import BatchJobKind
from integrations.framework.labels import RESOURCE_IN_USE_FINALIZER as FINALIZER

pytestmark = pytest.mark.asyncio(loop_scope="session")

POOL_LABEL = "fleetq.dev/node-pool"


async def _admitted_workload(cluster: Any, job: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    return workload if workload is not None and cluster.is_true(workload, "Admitted") else None


async def _running(cluster: Any, job: str) -> dict[str, Any] | None:
    found = await cluster.get(JOBS, job)
    return found if found is not None and found["spec"].get("suspend") is False else None


async def test_a_queued_job_runs_on_its_flavor_and_its_completion_admits_the_next(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    pool = cluster.name("gpu")
    flavor = await cluster.flavor("gpu", {POOL_LABEL: pool})
    cq = await cluster.cluster_queue("team", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("first", lq, cpu="2")
    first = await cluster.eventually(
        lambda: _admitted_workload(cluster, "first"), what="first admitted"
    )
    # Created after the first is in: equal creation seconds would otherwise tie on UID.
    await cluster.job("second", lq, cpu="2")
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "first", True)
    assert FINALIZER in first["metadata"]["finalizers"]
    assert first["status"]["admission"]["clusterQueue"] == cq
    assignment = first["status"]["admission"]["podSetAssignments"][0]
    assert assignment["flavors"] == {"cpu": flavor}
    assert cluster.is_true(first, "QuotaReserved")

    started = await cluster.eventually(lambda: _running(cluster, "first"), what="first unsuspended")
    pod_spec = started["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {POOL_LABEL: pool}
    # A started Job still matches its Workload: it keeps running under the same one.
    await asyncio.sleep(1.0)
    assert (await cluster.get(JOBS, "first") or {})["spec"]["suspend"] is False
    assert (await cluster.job_workload("first") or {})["metadata"]["uid"] == first["metadata"][
        "uid"
    ]

    # The second Job does not fit next to the first: it waits, suspended, with a reason.
    second = await cluster.eventually(
        lambda: cluster.job_workload("second"), what="second workload"
    )
    pending = await cluster.eventually(
        lambda: _pending_with_reason(cluster, "second"), what="second pending with a reason"
    )
    assert "insufficient" in pending["message"].lower() or "quota" in pending["message"].lower()
    assert (await cluster.get(JOBS, "second") or {})["spec"]["suspend"] is True
    assert not cluster.is_true(second, "Admitted")

    cq_status = await cluster.eventually(
        lambda: _cluster_queue_status(cluster, cq, admitted=1, pending=1), what="CQ status"
    )
    assert cq_status["flavorsUsage"] == [
        {"name": flavor, "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}
    ]
    active = cluster.condition({"status": cq_status}, "Active")
    assert active is not None and (active["status"], active["reason"]) == ("True", "Ready")
    lq_status = (await cluster.get(kinds.LOCAL_QUEUES, lq) or {}).get("status") or {}
    assert (lq_status.get("admittedWorkloads"), lq_status.get("pendingWorkloads")) == (1, 1)
    cq_object = await cluster.get(kinds.CLUSTER_QUEUES, cq) or {}
    assert FINALIZER in cq_object["metadata"].get("finalizers", [])

    # The first Job completes: its Workload finishes, releases the quota, the second starts.
    await cluster.complete_job("first")
    finished = await cluster.eventually(
        lambda: _finished_workload(cluster, "first"), what="first workload finished"
    )
    assert (cluster.condition(finished, "Finished") or {}).get("reason") == "Succeeded"
    await cluster.eventually(lambda: _running(cluster, "second"), what="second unsuspended")
    released = await cluster.eventually(
        lambda: _without_finalizer(cluster, finished["metadata"]["name"]),
        what="finished workload's finalizer dropped",
    )
    assert FINALIZER not in (released["metadata"].get("finalizers") or [])
    await cluster.eventually(
        lambda: _cluster_queue_status(cluster, cq, admitted=1, pending=0), what="CQ recount"
    )


async def test_a_higher_priority_job_preempts_and_the_victim_is_stopped_and_restored(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    pool = cluster.name("pool")
    flavor = await cluster.flavor("rf", {POOL_LABEL: pool})
    cq = await cluster.cluster_queue(
        "prio", flavor, "2", preemption={"withinClusterQueue": "LowerPriority"}
    )
    lq = await cluster.local_queue("main", cq)
    low = await cluster.priority_class("low", 10)
    high = await cluster.priority_class("high", 1000)
    original_selector = {"team": "research"}
    await cluster.job("low", lq, cpu="2", priority_class=low, node_selector=original_selector)
    started = await cluster.eventually(lambda: _running(cluster, "low"), what="low started")
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {
        **original_selector,
        POOL_LABEL: pool,
    }

    await cluster.job("high", lq, cpu="2", priority_class=high)
    high_started = await cluster.eventually(lambda: _running(cluster, "high"), what="high started")
    assert high_started["spec"]["template"]["spec"]["nodeSelector"] == {POOL_LABEL: pool}

    stopped = await cluster.get(JOBS, "low") or {}
    assert stopped["spec"]["suspend"] is True
    # The template is back to what the user wrote: the flavor's selector is gone.
    assert stopped["spec"]["template"]["spec"]["nodeSelector"] == original_selector
    victim = await cluster.job_workload("low") or {}
    preempted = cluster.condition(victim, "Preempted") or {}
    assert preempted.get("status") == "True"
    assert preempted.get("reason") == "InClusterQueue"
    evicted = cluster.condition(victim, "Evicted") or {}
    assert (evicted.get("status"), evicted.get("reason")) == ("True", "Preempted")
    assert not cluster.is_true(victim, "QuotaReserved")
    assert "admission" not in victim["status"]
    requeued = cluster.condition(victim, "Requeued") or {}
    assert (requeued.get("status"), requeued.get("reason")) == ("True", "Preempted")
    winner = await cluster.job_workload("high") or {}
    assert cluster.is_true(winner, "Admitted") and winner["spec"]["priority"] == 1000


async def _pending_with_reason(cluster: Any, job: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    reserved = cluster.condition(workload or {}, "QuotaReserved")
    if reserved and reserved["status"] == "False" and reserved.get("message"):
        return reserved
    return None


async def _cluster_queue_status(
    cluster: Any, name: str, *, admitted: int, pending: int
) -> dict[str, Any] | None:
    status = ((await cluster.get(kinds.CLUSTER_QUEUES, name)) or {}).get("status") or {}
    if status.get("admittedWorkloads") == admitted and status.get("pendingWorkloads") == pending:
        return status
    return None


async def _finished_workload(cluster: Any, job: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    return workload if workload is not None and cluster.is_true(workload, "Finished") else None


async def _without_finalizer(cluster: Any, name: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    if workload is not None and FINALIZER not in (workload["metadata"].get("finalizers") or []):
        return workload
    return None


async def test_a_job_deleted_with_orphan_propagation_leaves_its_workload_finished(
    hubs: Any, cluster: Any
) -> None:
    """Upstream's 'Should finish workload if the job is deleted with
    PropagationPolicy=DeletePropagationOrphan': the Workload stays, Finished with reason
    OwnerNotFound, without its finalizer, and its quota goes to the next job."""
    await hubs.start()
    flavor = await cluster.flavor("cpu", {POOL_LABEL: cluster.name("cpu")})
    cq = await cluster.cluster_queue("team", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("orphaned", lq, cpu="2")
    admitted = await cluster.eventually(
        lambda: _admitted_workload(cluster, "orphaned"), what="the job admitted"
    )
    await cluster.job("next", lq, cpu="2")
    await cluster.client.delete(
        JOBS, "orphaned", namespace=cluster.namespace, propagation_policy="Orphan"
    )
    name = admitted["metadata"]["name"]

    async def finished() -> dict[str, Any] | None:
        found = await cluster.get(kinds.WORKLOADS, name)
        if found is None or not cluster.is_true(found, "Finished"):
            return None
        return found if not found["metadata"].get("finalizers") else None

    workload = await cluster.eventually(finished, what="the orphaned Workload Finished")
    condition = next(c for c in workload["status"]["conditions"] if c["type"] == "Finished")
    assert condition["reason"] == "OwnerNotFound"
    await cluster.eventually(
        lambda: _admitted_workload(cluster, "next"), what="its quota admits the next job"
    )

    # The garbage collector's last step (this lite cluster has none): the job goes. Its
    # Workload, orphaned rather than deleted, stays even while it still names the job.
    await cluster.client.patch(
        JOBS, "orphaned", {"metadata": {"finalizers": None}}, namespace=cluster.namespace
    )

    async def job_gone() -> bool:
        return await cluster.get(JOBS, "orphaned") is None

    await cluster.eventually(job_gone, what="the job gone")
    await asyncio.sleep(2.0)  # the hub has seen the job go by now
    assert await cluster.get(kinds.WORKLOADS, name) is not None
    # A later event of the Workload (here a label; on a real cluster the hub's own
    # finishing writes, seen before the collector's) queues the gone job again: the hub
    # still knows it was orphaned while the Workload names it, and keeps it.
    await cluster.client.patch(
        kinds.WORKLOADS,
        name,
        {"metadata": {"labels": {"touched": "after-the-job-went"}}},
        namespace=cluster.namespace,
    )
    await asyncio.sleep(2.0)
    kept = await cluster.get(kinds.WORKLOADS, name)
    assert kept is not None and cluster.is_true(kept, "Finished")


async def test_a_workload_the_garbage_collector_orphans_first_is_finished_too(
    hubs: Any, cluster: Any
) -> None:
    """The garbage collector orphans dependents before the job goes: the Workload can lose
    its owner reference before the hub ever sees the job being deleted. It must still end
    Finished (OwnerNotFound) without its finalizer (upstream's orphan-propagation spec on
    a cluster with a garbage collector; this lite cluster has none, so the test does what
    it does, in its order)."""
    await hubs.start()
    flavor = await cluster.flavor("cpu", {POOL_LABEL: cluster.name("cpu")})
    cq = await cluster.cluster_queue("gc-order", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("disowned", lq, cpu="2")
    admitted = await cluster.eventually(
        lambda: _admitted_workload(cluster, "disowned"), what="the job admitted"
    )
    name = admitted["metadata"]["name"]
    await cluster.client.patch(
        kinds.WORKLOADS,
        name,
        {"metadata": {"ownerReferences": None}},
        namespace=cluster.namespace,
    )
    await cluster.client.delete(JOBS, "disowned", namespace=cluster.namespace)

    async def finished() -> dict[str, Any] | None:
        found = await cluster.get(kinds.WORKLOADS, name)
        if found is None or not cluster.is_true(found, "Finished"):
            return None
        return found if not found["metadata"].get("finalizers") else None

    workload = await cluster.eventually(finished, what="the disowned Workload Finished")
    condition = next(c for c in workload["status"]["conditions"] if c["type"] == "Finished")
    assert condition["reason"] == "OwnerNotFound"


async def test_a_workload_changed_since_the_decision_to_delete_it_is_kept(cluster: Any) -> None:
    """JobActions.delete_workload deletes the version it decided on: one that moved on
    since (the garbage collector taking its owner reference, the job deleted with orphan
    propagation) raises Conflict and stays, so the job is planned again from the news."""
    created = await cluster.workload(cluster.name("decided"), "main")
    name = created["metadata"]["name"]
    await cluster.client.patch(
        kinds.WORKLOADS,
        name,
        {"metadata": {"ownerReferences": None, "labels": {"moved": "on"}}},
        namespace=cluster.namespace,
    )
    actions = JobActions(BatchJobKind.resource, cluster.client)
    with pytest.raises(Conflict):
        await actions.delete_workload(None, created)
    current = await cluster.get(kinds.WORKLOADS, name)
    assert current is not None
    await actions.delete_workload(None, current)
    assert await cluster.get(kinds.WORKLOADS, name) is None
