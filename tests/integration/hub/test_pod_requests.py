"""What a Workload's pods will really request, counted on a real apiserver: its
namespace's LimitRange defaults and its RuntimeClass's overhead, as upstream's
AdjustResources counts them (pkg/workload/resources.go)."""

from __future__ import annotations

from typing import Any

import pytest

from core.manager import watched_kinds as kinds
from tests.builders import Workload

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _template(requests: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if requests is not None:
        container["resources"] = {"requests": requests}
    return {"spec": {"containers": [container], "restartPolicy": "Never", **spec}}


async def _workload(cluster: Any, name: str, queue: str, template: dict[str, Any]) -> None:
    body = Workload(name).queue(queue).pod_set("main", 1, template=template)
    await cluster.create(kinds.WORKLOADS, body.obj())


async def _state(cluster: Any, name: str) -> str | None:
    workload = await cluster.get(kinds.WORKLOADS, name) or {}
    reserved = cluster.condition(workload, "QuotaReserved")
    if reserved is None:
        return None
    return "reserved" if reserved["status"] == "True" else "pending"


async def _reserved(cluster: Any, name: str) -> bool:
    return await _state(cluster, name) == "reserved"


def _usage(workload: dict[str, Any]) -> dict[str, str]:
    return dict(workload["status"]["admission"]["podSetAssignments"][0]["resourceUsage"])


async def test_a_limit_range_default_request_is_charged_for_containers_without_one(
    hubs: Any, cluster: Any
) -> None:
    await cluster.create(
        kinds.LIMIT_RANGES,
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults"},
            "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "600m"}}]},
        },
    )
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("defaults", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await _workload(cluster, "first", lq, _template())
    await cluster.eventually(lambda: _reserved(cluster, "first"), what="first admitted")
    first = await cluster.get(kinds.WORKLOADS, "first") or {}
    assert _usage(first) == {"cpu": "600m"}, "0 before: LimitRange defaults were ignored"

    await _workload(cluster, "second", lq, _template())

    async def second_pending() -> bool:
        return await _state(cluster, "second") == "pending"

    await cluster.eventually(second_pending, what="second waits: 600m + 600m > 1")

    async def figures() -> dict[str, Any] | None:
        found = (await cluster.get(kinds.CLUSTER_QUEUES, cq) or {}).get("status") or {}
        return found if found.get("reservingWorkloads") == 1 else None

    status = await cluster.eventually(figures, what="queue figures")
    assert status["flavorsReservation"][0]["resources"][0]["total"] == "600m"

    # The LimitRange goes: the waiting Workload is counted again (at 0) and fits.
    await cluster.client.delete(kinds.LIMIT_RANGES, "defaults", namespace=cluster.namespace)

    await cluster.eventually(
        lambda: _reserved(cluster, "second"), what="second admitted once recounted"
    )


async def test_a_runtime_class_overhead_counts_against_quota(hubs: Any, cluster: Any) -> None:
    runtime = cluster.name("sandboxed")
    await cluster.create(
        kinds.RUNTIME_CLASSES,
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": runtime},
            "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m"}},
        },
    )
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("overhead", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await _workload(cluster, "plain", lq, _template({"cpu": "500m"}))
    await cluster.eventually(lambda: _reserved(cluster, "plain"), what="plain admitted")
    await _workload(cluster, "sandboxed", lq, _template({"cpu": "500m"}, runtimeClassName=runtime))

    async def sandboxed_pending() -> bool:
        return await _state(cluster, "sandboxed") == "pending"

    # 500m + 500m fit in 1 CPU; with the class's 250m overhead the second one does not.
    await cluster.eventually(sandboxed_pending, what="sandboxed waits for its overhead")
    plain = await cluster.get(kinds.WORKLOADS, "plain") or {}
    assert _usage(plain) == {"cpu": "500m"}
    await cluster.finish_workload("plain")

    async def sandboxed_reserved() -> dict[str, Any] | None:
        if await _state(cluster, "sandboxed") != "reserved":
            return None
        return await cluster.get(kinds.WORKLOADS, "sandboxed")

    sandboxed = await cluster.eventually(sandboxed_reserved, what="sandboxed admitted")
    assert _usage(sandboxed) == {"cpu": "750m"}
