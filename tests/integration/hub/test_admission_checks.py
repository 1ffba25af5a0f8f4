"""Admission checks through the hub: the test plays the check's controller (a made-up
controllerName) by writing `status.admissionChecks`, and the hub reacts as upstream does:
Ready admits, Retry evicts and requeues with the check back at Pending, Rejected
deactivates the Workload."""

from __future__ import annotations

import time
from typing import Any

import pytest

from core.kube.client import PatchType
from core.kube.errors import Conflict
from core.kube.resources import JOBS
from core.manager import watched_kinds as kinds
from tests.builders import AdmissionCheck

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _admission_check(cluster: Any, base: str) -> str:
    name = cluster.name(base)
    check = AdmissionCheck(name).controller_name(f"example.com/{name}")
    await cluster.create(kinds.ADMISSION_CHECKS, check.obj())
    # What its controller would say once it is up.
    await cluster.patch_status(
        kinds.ADMISSION_CHECKS,
        name,
        {
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Active",
                    "message": "the test controller is running",
                    "lastTransitionTime": _now(),
                }
            ]
        },
    )
    return name


def _check(workload: dict[str, Any], check: str) -> dict[str, Any] | None:
    for entry in (workload.get("status") or {}).get("admissionChecks") or ():
        if entry.get("name") == check:
            return dict(entry)
    return None


async def _set_check(cluster: Any, job: str, check: str, state: str, message: str) -> None:
    """Write one check's state as its controller does (guarded; retried on a lost race)."""
    while True:
        workload = await cluster.job_workload(job)
        assert workload is not None
        entries = []
        for entry in workload["status"]["admissionChecks"]:
            if entry["name"] == check:
                entry = {**entry, "state": state, "message": message}
                entry["lastTransitionTime"] = _now()
            entries.append(entry)
        try:
            await cluster.client.patch(
                kinds.WORKLOADS,
                workload["metadata"]["name"],
                {
                    "metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
                    "status": {"admissionChecks": entries},
                },
                patch_type=PatchType.MERGE,
                namespace=cluster.namespace,
                subresource="status",
            )
            return
        except Conflict:
            continue


async def _reserved_and_waiting(cluster: Any, job: str, check: str) -> dict[str, Any] | None:
    """Quota reserved, the check Pending, not Admitted yet."""
    workload = await cluster.job_workload(job)
    if workload is None or not cluster.is_true(workload, "QuotaReserved"):
        return None
    entry = _check(workload, check)
    if entry is None or entry.get("state") != "Pending" or cluster.is_true(workload, "Admitted"):
        return None
    return workload


async def _job_workload_if(cluster: Any, job: str, type_: str) -> dict[str, Any] | None:
    workload = await cluster.job_workload(job)
    return workload if workload is not None and cluster.is_true(workload, type_) else None


async def _running(cluster: Any, job: str) -> dict[str, Any] | None:
    found = await cluster.get(JOBS, job)
    return found if found is not None and found["spec"].get("suspend") is False else None


async def _cq_status(cluster: Any, name: str, **expected: Any) -> dict[str, Any] | None:
    status = ((await cluster.get(kinds.CLUSTER_QUEUES, name)) or {}).get("status") or {}
    return status if all(status.get(k) == v for k, v in expected.items()) else None


async def test_ready_admits_retry_evicts_and_requeues_rejected_deactivates(
    hubs: Any, cluster: Any, workload_history: Any
) -> None:
    await hubs.start()
    check = await _admission_check(cluster, "gate")
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue(
        "checked", flavor, "3", admissionChecksStrategy={"admissionChecks": [{"name": check}]}
    )
    lq = await cluster.local_queue("main", cq)
    for job in ("ready", "retry", "rejected"):
        await cluster.job(job, lq, cpu="1")
    for job in ("ready", "retry", "rejected"):
        await cluster.eventually(
            lambda job=job: _reserved_and_waiting(cluster, job, check),
            what=f"{job}: quota reserved, check Pending",
        )
        assert (await cluster.get(JOBS, job) or {})["spec"]["suspend"] is True

    # Ready: admitted, and the Job starts.
    await _set_check(cluster, "ready", check, "Ready", "approved by the test")
    await cluster.eventually(lambda: _running(cluster, "ready"), what="ready started")
    admitted = await cluster.job_workload("ready") or {}
    assert cluster.is_true(admitted, "Admitted")

    # Retry: evicted for the check, requeued, reserved again with the check back at Pending.
    reserved_before = await cluster.job_workload("retry") or {}
    await _set_check(cluster, "retry", check, "Retry", "try again later")

    async def reserved_again() -> dict[str, Any] | None:
        # Not the eviction itself (the checks go back to Pending in the same write): a
        # new reservation after the requeue.
        workload = await _reserved_and_waiting(cluster, "retry", check)
        if workload is None or cluster.is_true(workload, "Evicted"):
            return None
        entry = _check(workload, check) or {}
        return workload if entry.get("retryCount") == 1 else None

    again = await cluster.eventually(reserved_again, what="retry reserved again, check Pending")
    requeued = cluster.condition(again, "Requeued") or {}
    assert requeued.get("status") == "True"
    assert again["metadata"]["uid"] == reserved_before["metadata"]["uid"]

    # The eviction was written, then its completion (quota released: QuotaReserved=False,
    # as upstream writes it) before the new reservation, even if the hub reserved again
    # before it got to write the release.
    async def evictions_seen() -> list[tuple[str, str]] | None:
        seen = workload_history.conditions(again["metadata"]["name"], "Evicted")
        pairs = [(c["status"], c["reason"]) for c in seen]
        return pairs if ("False", "QuotaReserved") in pairs else None

    evictions = await cluster.eventually(evictions_seen, what="the watch saw it all")
    assert evictions == [("True", "AdmissionCheck"), ("False", "QuotaReserved")]
    reservations = [
        (c["status"], c["reason"])
        for c in workload_history.conditions(again["metadata"]["name"], "QuotaReserved")
    ]
    released_at = reservations.index(("False", "Pending"), 1)
    assert reservations[released_at - 1] == ("True", "QuotaReserved")
    assert reservations[released_at + 1 :][:1] == [("True", "QuotaReserved")]
    entry = _check(again, check) or {}
    assert entry.get("retryCount") == 1
    assert (await cluster.get(JOBS, "retry") or {})["spec"]["suspend"] is True
    await _set_check(cluster, "retry", check, "Ready", "second time lucky")
    await cluster.eventually(lambda: _running(cluster, "retry"), what="retry started")

    # Rejected: deactivated for good, its quota given back, the Job never starts.
    await _set_check(cluster, "rejected", check, "Rejected", "not on my watch")

    async def deactivated() -> dict[str, Any] | None:
        workload = await cluster.job_workload("rejected") or {}
        if workload.get("spec", {}).get("active") is not False:
            return None
        return workload if not cluster.is_true(workload, "QuotaReserved") else None

    rejected = await cluster.eventually(deactivated, what="rejected deactivated")
    evicted_condition = cluster.condition(rejected, "Evicted") or {}
    assert evicted_condition.get("status") == "True"
    assert evicted_condition.get("reason", "").startswith("Deactivated")
    assert check in evicted_condition.get("message", "")
    assert "admission" not in rejected["status"]
    assert (await cluster.get(JOBS, "rejected") or {})["spec"]["suspend"] is True
    status = await cluster.eventually(
        lambda: _cq_status(cluster, cq, admittedWorkloads=2, reservingWorkloads=2),
        what="CQ counts the two admitted ones only",
    )
    assert status.get("pendingWorkloads", 0) == 0


async def test_a_check_update_the_job_cannot_take_finishes_it_failed_to_start(
    hubs: Any, cluster: Any
) -> None:
    """A Ready check whose podSetUpdates contradict the Job's own nodeSelector: the Job can
    never start as admitted, so (as upstream) the Workload finishes with FailedToStart,
    its quota is released and the Job stays suspended."""
    await hubs.start()
    check = await _admission_check(cluster, "placer")
    flavor = await cluster.flavor("any", {})
    cq = await cluster.cluster_queue(
        "placed", flavor, "2", admissionChecksStrategy={"admissionChecks": [{"name": check}]}
    )
    lq = await cluster.local_queue("main", cq)
    await cluster.job("pinned", lq, cpu="1", node_selector={"zone": "a"})
    await cluster.eventually(
        lambda: _reserved_and_waiting(cluster, "pinned", check), what="reserved, check Pending"
    )
    workload = await cluster.job_workload("pinned") or {}
    entries = []
    for entry in workload["status"]["admissionChecks"]:
        if entry["name"] == check:
            entry = {
                **entry,
                "state": "Ready",
                "message": "placed in zone b",
                "lastTransitionTime": _now(),
                "podSetUpdates": [{"name": "main", "nodeSelector": {"zone": "b"}}],
            }
        entries.append(entry)
    await cluster.client.patch(
        kinds.WORKLOADS,
        workload["metadata"]["name"],
        {
            "metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
            "status": {"admissionChecks": entries},
        },
        patch_type=PatchType.MERGE,
        namespace=cluster.namespace,
        subresource="status",
    )
    finished = await cluster.eventually(
        lambda: _job_workload_if(cluster, "pinned", "Finished"), what="pinned finished"
    )
    condition = cluster.condition(finished, "Finished") or {}
    assert condition.get("reason") == "FailedToStart"
    assert "zone" in condition.get("message", "")
    assert (await cluster.get(JOBS, "pinned") or {})["spec"]["suspend"] is True
    await cluster.eventually(
        lambda: _cq_status(cluster, cq, reservingWorkloads=0, admittedWorkloads=0),
        what="the quota given back",
    )
