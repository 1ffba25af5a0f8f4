"""Workloads created directly, with no job, driven the way upstream's perf runner drives them:
it marks them Finished itself and completes evictions by clearing the reservation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from core.kube.client import PatchType
from core.kube.resources import EVENTS
from core.manager import watched_kinds as kinds
from hub.app import HubOptions
from integrations.framework.labels import RESOURCE_IN_USE_FINALIZER
from tests.builders import PodTemplate, Workload

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _workload_if(cluster: Any, name: str, type_: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload is not None and cluster.is_true(workload, type_) else None


async def _reason(cluster: Any, name: str) -> str | None:
    """The QuotaReserved=False message of a workload waiting for quota."""
    workload = await cluster.get(kinds.WORKLOADS, name)
    reserved = cluster.condition(workload or {}, "QuotaReserved")
    return reserved["message"] if reserved and reserved["status"] == "False" else None


async def _set_status(cluster: Any, workload: dict[str, Any], status: dict[str, Any]) -> None:
    """A merge patch guarded by the version read, as a careful external controller writes."""
    await cluster.client.patch(
        kinds.WORKLOADS,
        workload["metadata"]["name"],
        {
            "metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
            "status": status,
        },
        patch_type=PatchType.MERGE,
        namespace=cluster.namespace,
        subresource="status",
    )


async def test_a_workload_created_directly_is_admitted_and_finishing_it_frees_its_quota(
    hubs: Any, cluster: Any
) -> None:
    hub = await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("direct", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("alpha", lq)
    alpha = await cluster.eventually(
        lambda: _workload_if(cluster, "alpha", "Admitted"), what="alpha admitted"
    )
    await cluster.workload("beta", lq)
    await cluster.eventually(lambda: _reason(cluster, "beta"), what="beta pending")
    assert alpha["status"]["admission"]["clusterQueue"] == cq
    assert alpha["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "1"}
    beta = await cluster.get(kinds.WORKLOADS, "beta")
    assert not cluster.is_true(beta, "QuotaReserved")

    # The runner's way of finishing: append Finished to the conditions. The hub takes it
    # as written (no rewrite of the runner's reason).
    conditions = [*alpha["status"]["conditions"]]
    conditions.append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "ByTest",
            "message": "By test runner",
            "lastTransitionTime": _now(),
        }
    )
    await _set_status(cluster, alpha, {"conditions": conditions})
    await cluster.eventually(
        lambda: _workload_if(cluster, "beta", "Admitted"), what="beta admitted"
    )
    alpha_after = await cluster.get(kinds.WORKLOADS, "alpha")
    assert (cluster.condition(alpha_after, "Finished") or {}).get("reason") == "ByTest"

    # Once settled, the hub writes nothing more: every status already says what it should.
    async def quiet() -> bool:
        before = hub.client.writes.total
        await asyncio.sleep(1.0)
        return hub.client.writes.total == before

    await cluster.eventually(quiet, timeout=15, what="no more writes once settled")


async def test_an_evicted_workload_holds_its_quota_until_its_reservation_is_cleared(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue(
        "evict", flavor, "1", preemption={"withinClusterQueue": "LowerPriority"}
    )
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("victim", lq, priority=1)
    await cluster.eventually(lambda: _workload_if(cluster, "victim", "Admitted"), what="victim in")
    await cluster.workload("urgent", lq, priority=100)
    victim = await cluster.eventually(
        lambda: _workload_if(cluster, "victim", "Evicted"), what="victim evicted"
    )
    assert (cluster.condition(victim, "Preempted") or {}).get("reason") == "InClusterQueue"
    # Without a job to stop, the quota stays held: the urgent one waits for the preemption.
    assert cluster.is_true(victim, "QuotaReserved")
    urgent = await cluster.get(kinds.WORKLOADS, "urgent")
    assert not cluster.is_true(urgent, "QuotaReserved")

    # Clear the reservation as the runner does; the engine releases it and admits urgent.
    conditions = [
        c for c in victim["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted")
    ]
    conditions += [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "Evicted by the test runner",
            "lastTransitionTime": _now(),
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "NoReservation",
            "message": "The workload has no reservation",
            "lastTransitionTime": _now(),
        },
    ]
    await _set_status(cluster, victim, {"conditions": conditions, "admission": None})
    await cluster.eventually(lambda: _workload_if(cluster, "urgent", "Admitted"), what="urgent in")

    async def victim_queued_again() -> dict[str, Any] | None:
        status = ((await cluster.get(kinds.CLUSTER_QUEUES, cq)) or {}).get("status") or {}
        counts = (status.get("admittedWorkloads"), status.get("pendingWorkloads"))
        return status if counts == (1, 1) else None

    await cluster.eventually(victim_queued_again, what="victim back in its queue")
    victim = await cluster.get(kinds.WORKLOADS, "victim")
    assert not cluster.is_true(victim, "QuotaReserved")
    assert "admission" not in victim["status"]


async def test_a_workload_the_engine_cannot_read_is_told_why_and_blocks_nobody(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("bad", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    # The CRD refuses a request that is not a quantity ("plenty"); one that matches the
    # quantity pattern but no quantity fleetq can count still gets through the schema.
    await cluster.workload("broken", lq, cpu="1e5000")
    await cluster.workload("fine", lq)

    await cluster.eventually(lambda: _workload_if(cluster, "fine", "Admitted"), what="fine in")

    async def told() -> dict[str, Any] | None:
        broken = await cluster.get(kinds.WORKLOADS, "broken")
        reserved = cluster.condition(broken or {}, "QuotaReserved")
        return reserved if reserved and reserved["reason"] == "Inadmissible" else None

    reserved = await cluster.eventually(told, what="broken workload's condition")
    assert reserved["status"] == "False"
    assert reserved["message"].startswith(
        "The Workload cannot be queued:"
        " spec.podSets[0].template.spec.containers[0].resources.requests[cpu]:"
    ), reserved["message"]
    assert "1e5000" in reserved["message"]

    async def warned() -> list[dict[str, Any]] | None:
        page = await cluster.client.list(
            EVENTS, namespace=cluster.namespace, field_selector="regarding.name=broken"
        )
        found = [e for e in page.items if e.get("reason") == "InvalidObject"]
        return found or None

    events = await cluster.eventually(warned, what="a Warning event on the workload")
    assert events[0]["type"] == "Warning"


async def test_wrong_resource_lists_stay_pending_and_never_bypass_quota(
    hubs: Any, cluster: Any
) -> None:
    """Without the hub's webhooks (as here) the API takes a negative request; the engine
    keeps it pending and never lets it free quota: 8 and 4 cpus never share 8."""
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("eight", flavor, "8")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("negative", lq, cpu="-4")
    over = PodTemplate().request("cpu", "2").limit("cpu", "1")
    await cluster.create(kinds.WORKLOADS, Workload("over").queue(lq).pod_set(template=over).obj())
    await cluster.workload("eight", lq, cpu="8")
    await cluster.eventually(lambda: _workload_if(cluster, "eight", "Admitted"), what="eight in")
    await cluster.workload("four", lq, cpu="4")

    async def pending_with(name: str, fragment: str) -> str | None:
        message = await _reason(cluster, name)
        return message if message is not None and fragment in message else None

    negative = await cluster.eventually(
        lambda: pending_with("negative", "must be greater than"), what="negative told why"
    )
    assert negative == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]"
        '.resources.requests[cpu]: Invalid value: "-4": must be greater than or equal to 0'
    )
    over_message = await cluster.eventually(
        lambda: pending_with("over", "limits"), what="over told why"
    )
    assert over_message == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]:"
        ' Invalid value: ["cpu"]: requests must not exceed its limits'
    )
    await cluster.eventually(lambda: pending_with("four", "insufficient"), what="four waits")
    for name in ("negative", "over", "four"):
        assert not cluster.is_true(await cluster.get(kinds.WORKLOADS, name), "QuotaReserved")


async def test_probes_and_metrics_are_served_with_upstream_names(hubs: Any, cluster: Any) -> None:
    hub = await hubs.start(
        options=HubOptions(
            health_port=0,
            metrics_port=0,
            visibility_port=0,
            queue_status_interval_seconds=0.2,
            webhooks=False,
        )
    )
    port = hub.ports["health"]
    assert hub.ports["metrics"] == port  # both asked for any port: one server serves both
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("metrics", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("one", lq)
    await cluster.eventually(lambda: _workload_if(cluster, "one", "Admitted"), what="one in")
    await cluster.workload("two", lq)

    async with aiohttp.ClientSession() as session:
        for path in ("/healthz", "/readyz"):
            async with session.get(f"http://127.0.0.1:{port}{path}") as reply:
                assert reply.status == 200, path

        async def scraped() -> str | None:
            async with session.get(f"http://127.0.0.1:{port}/metrics") as reply:
                text = await reply.text()
            wanted = (
                f'kueue_pending_workloads{{cluster_queue="{cq}",replica_role="standalone",'
                'status="inadmissible"} 1.0'
            )
            return text if wanted in text else None

        text = await cluster.eventually(scraped, what="queue gauges")
        visibility = hub.ports["visibility"]
        path = f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads"
        async with session.get(f"http://127.0.0.1:{visibility}{path}") as reply:
            assert reply.status == 200
            pending = await reply.json()
        assert [item["metadata"]["name"] for item in pending["items"]] == ["two"]
        assert pending["items"][0]["localQueueName"] == lq
    labels = f'cluster_queue="{cq}",priority_class="",replica_role="standalone"'
    assert f"kueue_admitted_workloads_total{{{labels}}} 1.0" in text
    assert f"kueue_quota_reserved_workloads_total{{{labels}}} 1.0" in text
    assert (
        f'kueue_admitted_active_workloads{{cluster_queue="{cq}",replica_role="standalone"}} 1.0'
        in text
    )
    assert 'kueue_admission_attempts_total{replica_role="standalone",result="success"}' in text


async def test_deleting_an_ownerless_workload_drops_its_finalizer_and_frees_its_quota(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("delete", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("first", lq, finalizers=[RESOURCE_IN_USE_FINALIZER])
    await cluster.eventually(lambda: _workload_if(cluster, "first", "Admitted"), what="first in")
    await cluster.workload("second", lq)

    await cluster.client.delete(kinds.WORKLOADS, "first", namespace=cluster.namespace)

    async def gone() -> bool:
        return await cluster.get(kinds.WORKLOADS, "first") is None

    await cluster.eventually(gone, what="first deleted (finalizer dropped)")
    await cluster.eventually(lambda: _workload_if(cluster, "second", "Admitted"), what="second in")
