"""Reliability on a real apiserver: a restarted hub adopts what it finds (no workload lost,
none admitted twice), and of two hubs sharing a Lease only the leader writes."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from core.kube.resources import LEASES, resource_label
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from hub.app import HubOptions

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUOTA = 3


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _workloads(cluster: Any) -> dict[str, dict[str, Any]]:
    return {w["metadata"]["name"]: w for w in await cluster.list(kinds.WORKLOADS)}


def _holding(cluster: Any, workloads: dict[str, dict[str, Any]]) -> set[str]:
    """Workloads holding quota now (reserved and not finished)."""
    return {
        name
        for name, w in workloads.items()
        if cluster.is_true(w, "QuotaReserved") and not cluster.is_true(w, "Finished")
    }


async def test_a_restarted_hub_keeps_every_admission_and_loses_no_workload(
    hubs: Any, cluster: Any
) -> None:
    first = await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("restart", flavor, str(QUOTA))
    lq = await cluster.local_queue("main", cq)
    for index in range(5):
        await cluster.workload(f"w{index}", lq)

    async def three_in() -> dict[str, dict[str, Any]] | None:
        found = await _workloads(cluster)
        return found if len(_holding(cluster, found)) == QUOTA else None

    before = await cluster.eventually(three_in, what="three admitted")
    admitted = _holding(cluster, before)
    await hubs.stop(first)

    # While no hub runs: one admitted workload finishes, a new one arrives.
    done = sorted(admitted)[0]
    finished = before[done]
    conditions = [
        *finished["status"]["conditions"],
        {
            "type": "Finished",
            "status": "True",
            "reason": "ByTest",
            "message": "finished while the hub was down",
            "lastTransitionTime": _now(),
        },
    ]
    await cluster.patch_status(kinds.WORKLOADS, done, {"conditions": conditions})
    await cluster.workload("late", lq)

    await hubs.start()
    samples: list[int] = []

    async def refilled() -> dict[str, dict[str, Any]] | None:
        found = await _workloads(cluster)
        holding = _holding(cluster, found)
        samples.append(len(holding))
        late = cluster.condition(found["late"], "QuotaReserved")
        return found if len(holding) == QUOTA and late is not None else None

    after = await cluster.eventually(refilled, what="freed quota re-used, late workload seen")
    assert max(samples) <= QUOTA, f"over-admitted after restart: {samples}"
    for name in admitted - {done}:
        # Still admitted by the same decision: same admission, same transition time.
        assert after[name]["status"]["admission"] == before[name]["status"]["admission"]
        assert cluster.condition(after[name], "QuotaReserved") == cluster.condition(
            before[name], "QuotaReserved"
        )
    assert set(after) == {f"w{i}" for i in range(5)} | {"late"}
    newly = _holding(cluster, after) - admitted
    assert len(newly) == 1
    status = await cluster.eventually(
        lambda: _reserving(cluster, cq, QUOTA), what="CQ counts after restart"
    )
    assert status["flavorsReservation"][0]["resources"][0]["total"] == str(QUOTA)


async def _reserving(cluster: Any, name: str, count: int) -> dict[str, Any] | None:
    status = ((await cluster.get(kinds.CLUSTER_QUEUES, name)) or {}).get("status") or {}
    return status if status.get("reservingWorkloads") == count else None


async def test_of_two_hubs_only_the_leader_writes_and_the_other_takes_over(
    hubs: Any, cluster: Any
) -> None:
    configuration = dataclasses.replace(
        Configuration(),
        leader_election=LeaderElection(
            leader_elect=True,
            lease_duration_seconds=3.0,
            renew_deadline_seconds=2.0,
            retry_period_seconds=0.5,
        ),
    )

    def options(identity: str) -> HubOptions:
        return HubOptions(
            health_port=-1,
            metrics_port=-1,
            identity=identity,
            lease_namespace=cluster.namespace,
            lease_name=cluster.name("hub"),
            queue_status_interval_seconds=0.2,
            webhooks=False,
        )

    a = await hubs.start(configuration, options("hub-a"))
    b = await hubs.start(configuration, options("hub-b"))
    leader = await cluster.eventually(lambda: _one_leader(a, b), what="one leader among two hubs")
    follower = b if leader is a else a

    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("ha", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("first", lq)
    await cluster.eventually(lambda: _admitted(cluster, "first"), what="first admitted")
    await cluster.eventually(lambda: _reserving(cluster, cq, 1), what="CQ status by the leader")

    leases = resource_label(LEASES)
    assert follower.client.writes.total - follower.client.writes.count(resource=leases) == 0
    assert leader.client.writes.count(resource="workloads.kueue.x-k8s.io/status") >= 1
    assert not follower.leading
    # The follower's engine followed the leader's decision (a warm standby).
    mirrored = follower.host.engine.workload_status(f"{cluster.namespace}/first")
    assert mirrored is not None and mirrored.admission is not None
    assert follower.host.engine.cluster_queue_usage(cq) == {(flavor, "cpu"): 1000}

    await hubs.stop(leader)
    await cluster.eventually(lambda: _leads(follower), timeout=10, what="takeover")
    await cluster.workload("second", lq)
    second = await cluster.eventually(lambda: _admitted(cluster, "second"), what="second admitted")
    assert second["status"]["admission"]["clusterQueue"] == cq
    await cluster.eventually(lambda: _reserving(cluster, cq, 2), what="both counted")
    first = await cluster.get(kinds.WORKLOADS, "first")
    assert cluster.is_true(first, "Admitted")


async def _one_leader(a: Any, b: Any) -> Any:
    if a.leading != b.leading:
        return a if a.leading else b
    return None


async def _leads(hub: Any) -> bool:
    return bool(hub.leading)


async def _admitted(cluster: Any, name: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload is not None and cluster.is_true(workload, "Admitted") else None
