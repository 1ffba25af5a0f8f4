"""A WorkloadPriorityClass's value changed on a real apiserver: the leader rewrites the
priority of the Workloads naming it (upstream's workloadpriorityclass_controller), writing
each once, and the queue follows the new order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.manager import watched_kinds as kinds
from tests.builders import Workload

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _workload_if(cluster: Any, name: str, type_: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload is not None and cluster.is_true(workload, type_) else None


async def _classed_workload(cluster: Any, name: str, queue: str, cls: str, value: int) -> None:
    body = (
        Workload(name)
        .queue(queue)
        .priority_class(cls)
        .priority(value)
        .pod_set("main", 1, requests={"cpu": "1"})
    )
    await cluster.create(kinds.WORKLOADS, body.obj())


async def test_a_class_value_change_rewrites_its_workloads_and_reorders_the_queue(
    hubs: Any, cluster: Any
) -> None:
    hub = await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("wpc", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    steady = await cluster.priority_class("steady", 100)
    rising = await cluster.priority_class("rising", 100)
    await cluster.workload("holder", lq)
    await cluster.eventually(lambda: _workload_if(cluster, "holder", "Admitted"), what="holder")
    await _classed_workload(cluster, "early", lq, steady, 100)
    await asyncio.sleep(1.1)  # creation timestamps have one-second resolution
    await _classed_workload(cluster, "late", lq, rising, 100)
    await _classed_workload(cluster, "late-2", lq, rising, 100)

    await cluster.patch(kinds.WORKLOAD_PRIORITY_CLASSES, rising, {"value": 500})

    async def rewritten() -> list[dict[str, Any]] | None:
        found = [await cluster.get(kinds.WORKLOADS, n) for n in ("late", "late-2")]
        ok = all(w and w["spec"]["priority"] == 500 for w in found)
        return found if ok else None

    await cluster.eventually(rewritten, what="priorities rewritten")
    early = await cluster.get(kinds.WORKLOADS, "early") or {}
    assert early["spec"]["priority"] == 100, "a Workload of another class is left alone"

    # Idempotent: nothing is written again once every Workload carries the value.
    writes = hub.priority_sync.writes
    assert writes == 2
    hub.priority_sync.class_changed(rising)
    await asyncio.sleep(0.5)
    assert hub.priority_sync.writes == writes
    again = [await cluster.get(kinds.WORKLOADS, n) for n in ("late", "late-2")]
    assert [w["spec"]["priority"] for w in again if w] == [500, 500]

    # The queue follows: freed quota goes to a rewritten Workload, not the older one.
    async def a_late_one_admitted() -> dict[str, Any] | None:
        for name in ("late", "late-2"):
            found = await _workload_if(cluster, name, "QuotaReserved")
            if found is not None:
                return found
        return None

    await cluster.finish_workload("holder")
    admitted = await cluster.eventually(a_late_one_admitted, what="a rewritten one admitted")
    assert admitted["spec"]["priority"] == 500
    early = await cluster.get(kinds.WORKLOADS, "early") or {}
    assert not cluster.is_true(early, "QuotaReserved")
