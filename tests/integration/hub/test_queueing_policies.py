"""Queueing policies through the hub on a real apiserver: StrictFIFO against BestEffortFIFO,
cohort borrowing and reclaim, partial admission, a ClusterQueue's stopPolicy, and cohort
parent cycles."""

from __future__ import annotations

from typing import Any

import pytest

from core.kube.resources import EVENTS, JOBS
from core.manager import watched_kinds as kinds
from tests.builders import Cohort

pytestmark = pytest.mark.asyncio(loop_scope="session")

POOL_LABEL = "fleetq.dev/node-pool"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"


async def _workload_if(cluster: Any, name: str, type_: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload is not None and cluster.is_true(workload, type_) else None


async def _job_workload_if(cluster: Any, job: str, type_: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    return workload if workload is not None and cluster.is_true(workload, type_) else None


async def _running(cluster: Any, job: str) -> dict[str, Any] | None:
    found = await cluster.get(JOBS, job)
    return found if found is not None and found["spec"].get("suspend") is False else None


async def _suspended(cluster: Any, job: str) -> dict[str, Any] | None:
    found = await cluster.get(JOBS, job)
    return found if found is not None and found["spec"].get("suspend") is True else None


async def _cq_status(cluster: Any, name: str, **expected: Any) -> dict[str, Any] | None:
    status = ((await cluster.get(kinds.CLUSTER_QUEUES, name)) or {}).get("status") or {}
    return status if all(status.get(k) == v for k, v in expected.items()) else None


def _reserved(status: dict[str, Any]) -> tuple[str, str]:
    """(total, borrowed) CPU reserved in a one-flavor ClusterQueue's status."""
    resource = status["flavorsReservation"][0]["resources"][0]
    return resource["total"], resource.get("borrowed", "0")


async def test_strict_fifo_waits_behind_its_head_while_best_effort_admits_around_it(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    queues = {
        "strict": await cluster.cluster_queue("strict", flavor, "4", queueingStrategy="StrictFIFO"),
        "best": await cluster.cluster_queue("best", flavor, "4", queueingStrategy="BestEffortFIFO"),
    }
    for kind, cq in queues.items():
        lq = await cluster.local_queue(kind, cq)
        await cluster.workload(f"{kind}-running", lq, cpu="3")
        await cluster.eventually(
            lambda kind=kind: _workload_if(cluster, f"{kind}-running", "Admitted"),
            what=f"{kind}-running admitted",
        )
        # The head: higher priority, so it heads the queue whatever the creation times;
        # 3 CPUs do not fit next to the running 3 of 4 (no preemption is configured).
        await cluster.workload(f"{kind}-big", lq, cpu="3", priority=100)
        await cluster.workload(f"{kind}-small", lq, cpu="1")

    await cluster.eventually(
        lambda: _workload_if(cluster, "best-small", "Admitted"), what="best-small admitted"
    )
    # The same hub ran the same cycles over both queues; the strict one still holds
    # its small workload back, with both counted pending and one reserving.
    await cluster.eventually(
        lambda: _cq_status(cluster, queues["strict"], pendingWorkloads=2, reservingWorkloads=1),
        what="strict CQ: two pending, one reserving",
    )
    await cluster.eventually(
        lambda: _cq_status(cluster, queues["best"], pendingWorkloads=1, reservingWorkloads=2),
        what="best-effort CQ: one pending, two reserving",
    )
    for name in ("strict-small", "strict-big", "best-big"):
        workload = await cluster.get(kinds.WORKLOADS, name)
        assert not cluster.is_true(workload, "QuotaReserved"), name

    # Once the head fits, the strict queue admits it and then the one behind it.
    await cluster.finish_workload("strict-running")
    for name in ("strict-big", "strict-small"):
        await cluster.eventually(
            lambda name=name: _workload_if(cluster, name, "Admitted"), what=f"{name} admitted"
        )
    status = await cluster.eventually(
        lambda: _cq_status(cluster, queues["strict"], pendingWorkloads=0, reservingWorkloads=2),
        what="strict CQ drained",
    )
    assert _reserved(status) == ("4", "0")


async def test_a_queue_borrows_idle_cohort_quota_and_the_lender_reclaims_it(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    pool = cluster.name("pool")
    flavor = await cluster.flavor("rf", {POOL_LABEL: pool})
    cohort = cluster.name("co")
    lender = await cluster.cluster_queue(
        "lender", flavor, "2", cohortName=cohort, preemption={"reclaimWithinCohort": "Any"}
    )
    borrower = await cluster.cluster_queue("borrower", flavor, "2", cohortName=cohort)
    lending_lq = await cluster.local_queue("lend", lender)
    borrowing_lq = await cluster.local_queue("borrow", borrower)

    original_selector = {"team": "b"}
    await cluster.job(
        "greedy", borrowing_lq, cpu="1", parallelism=3, node_selector=original_selector
    )
    started = await cluster.eventually(lambda: _running(cluster, "greedy"), what="greedy started")
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {
        **original_selector,
        POOL_LABEL: pool,
    }
    greedy = await cluster.job_workload("greedy") or {}
    assert greedy["status"]["admission"]["clusterQueue"] == borrower
    assert greedy["status"]["admission"]["podSetAssignments"][0]["count"] == 3
    status = await cluster.eventually(
        lambda: _cq_status(cluster, borrower, reservingWorkloads=1), what="borrower counted"
    )
    assert _reserved(status) == ("3", "1"), "3 CPUs on a 2-CPU quota borrow 1 from the cohort"

    # The lender needs its own 2 CPUs back: it preempts the borrower.
    await cluster.job("owner", lending_lq, cpu="2")
    await cluster.eventually(lambda: _running(cluster, "owner"), what="owner started")
    stopped = await cluster.eventually(
        lambda: _suspended(cluster, "greedy"), what="greedy suspended"
    )
    assert stopped["spec"]["template"]["spec"]["nodeSelector"] == original_selector
    victim = await cluster.job_workload("greedy") or {}
    preempted = cluster.condition(victim, "Preempted") or {}
    assert (preempted.get("status"), preempted.get("reason")) == ("True", "InCohortReclamation")
    evicted = cluster.condition(victim, "Evicted") or {}
    assert (evicted.get("status"), evicted.get("reason")) == ("True", "Preempted")
    assert not cluster.is_true(victim, "QuotaReserved")
    owner = await cluster.job_workload("owner") or {}
    assert owner["status"]["admission"]["clusterQueue"] == lender
    lender_status = await cluster.eventually(
        lambda: _cq_status(cluster, lender, reservingWorkloads=1), what="lender counted"
    )
    assert _reserved(lender_status) == ("2", "0")
    await cluster.eventually(
        lambda: _cq_status(cluster, borrower, reservingWorkloads=0, pendingWorkloads=1),
        what="borrower's workload back in its queue",
    )


async def test_a_job_with_min_parallelism_is_admitted_with_the_pods_that_fit(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("partial", flavor, "4")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("wide", lq, cpu="1", parallelism=6, annotations={MIN_PARALLELISM: "2"})

    started = await cluster.eventually(lambda: _running(cluster, "wide"), what="wide started")
    assert started["spec"]["parallelism"] == 4, "6 pods asked, 4 fit, at least 2 needed"
    workload = await cluster.job_workload("wide") or {}
    pod_set = workload["spec"]["podSets"][0]
    assert (pod_set["count"], pod_set["minCount"]) == (6, 2)
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assert assignment["count"] == 4
    assert assignment["resourceUsage"] == {"cpu": "4"}
    status = await cluster.eventually(
        lambda: _cq_status(cluster, cq, admittedWorkloads=1), what="CQ counts the partial one"
    )
    assert _reserved(status) == ("4", "0")


async def test_stop_policy_hold_admits_nothing_new_and_hold_and_drain_evicts(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("stoppable", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("before", lq, cpu="1")
    await cluster.eventually(lambda: _running(cluster, "before"), what="before started")

    await cluster.patch(kinds.CLUSTER_QUEUES, cq, {"spec": {"stopPolicy": "Hold"}})

    async def inactive() -> dict[str, Any] | None:
        status = await _cq_status(cluster, cq)
        active = cluster.condition({"status": status or {}}, "Active") or {}
        return active if active.get("status") == "False" else None

    active = await cluster.eventually(inactive, what="CQ inactive")
    assert active["reason"] == "Stopped"
    await cluster.job("during", lq, cpu="1")
    await cluster.eventually(
        lambda: _cq_status(cluster, cq, pendingWorkloads=1, admittedWorkloads=1),
        what="the new Job counted pending, the running one still admitted",
    )
    assert (await cluster.get(JOBS, "during") or {})["spec"]["suspend"] is True
    assert (await cluster.get(JOBS, "before") or {})["spec"]["suspend"] is False
    assert await _job_workload_if(cluster, "during", "QuotaReserved") is None

    await cluster.patch(kinds.CLUSTER_QUEUES, cq, {"spec": {"stopPolicy": "HoldAndDrain"}})
    await cluster.eventually(lambda: _suspended(cluster, "before"), what="before drained")
    drained = await cluster.job_workload("before") or {}
    evicted = cluster.condition(drained, "Evicted") or {}
    assert (evicted.get("status"), evicted.get("reason")) == ("True", "ClusterQueueStopped")
    await cluster.eventually(
        lambda: _cq_status(cluster, cq, reservingWorkloads=0, pendingWorkloads=2),
        what="nothing reserving while drained",
    )
    assert await _job_workload_if(cluster, "during", "QuotaReserved") is None

    await cluster.patch(kinds.CLUSTER_QUEUES, cq, {"spec": {"stopPolicy": "None"}})
    for job in ("before", "during"):
        await cluster.eventually(
            lambda job=job: _running(cluster, job), what=f"{job} runs after the restart"
        )


async def _cycle_events(cluster: Any, cohort: str) -> list[dict[str, Any]] | None:
    # Events about cluster-scoped objects live in "default", as upstream's do.
    page = await cluster.client.list(
        EVENTS, namespace="default", field_selector=f"regarding.name={cohort}"
    )
    found = [e for e in page.items if e.get("reason") == "CohortHasCycle"]
    return found or None


async def test_cohorts_in_a_parent_cycle_are_told_and_their_queues_admit_nothing(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    left, right, alone = cluster.name("left"), cluster.name("right"), cluster.name("alone")
    cq = await cluster.cluster_queue("looped", flavor, "2", cohortName=left)
    lq = await cluster.local_queue("main", cq)
    await cluster.create(kinds.COHORTS, Cohort(left).parent(right).obj())
    await cluster.create(kinds.COHORTS, Cohort(right).parent(left).obj())
    await cluster.create(kinds.COHORTS, Cohort(alone).parent(alone).obj())
    await cluster.workload("stuck", lq)

    async def cq_inactive() -> dict[str, Any] | None:
        found = cluster.condition(await cluster.get(kinds.CLUSTER_QUEUES, cq) or {}, "Active")
        return found if found and found["reason"] == "CohortHasCycle" else None

    active = await cluster.eventually(cq_inactive, what="ClusterQueue told of the cycle")
    assert (active["status"], active["message"]) == (
        "False",
        "Can't admit new workloads: is in a cohort tree with a cycle.",
    )
    # v1beta2 Cohorts have no conditions: each Cohort of a loop gets a Warning Event.
    for cohort, loop in (
        (left, f"{left} -> {right} -> {left}"),
        (right, f"{right} -> {left} -> {right}"),
        (alone, f"{alone} -> {alone}"),
    ):
        events = await cluster.eventually(
            lambda c=cohort: _cycle_events(cluster, c), what=f"cycle event on {cohort}"
        )
        assert events[0]["type"] == "Warning"
        assert events[0]["note"].startswith(f"Cohort has a cycle: {loop}; ")
    stuck = await cluster.get(kinds.WORKLOADS, "stuck") or {}
    assert not cluster.is_true(stuck, "QuotaReserved")

    await cluster.patch(kinds.COHORTS, right, {"spec": {"parentName": None}})
    await cluster.eventually(lambda: _workload_if(cluster, "stuck", "Admitted"), what="admitted")
    ready = cluster.condition(await cluster.get(kinds.CLUSTER_QUEUES, cq) or {}, "Active")
    assert ready is not None and ready["reason"] == "Ready"
