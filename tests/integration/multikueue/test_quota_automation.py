"""Manager quota automation (the MultiKueueManagerQuotaAutomation gate) against real
apiservers: a manager and two lite workers, the hub's connections in-process.

The manager ClusterQueue's nominal quota becomes the sum of the worker ClusterQueues its
LocalQueue feeds once the MultiKueueConfig says `quotaManagement: Automated`; a worker
quota change is followed; a worker resource the manager does not cover is refused by
name; a worker that drops out is left out of the sum.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.api.quantity import parse_quantity
from tests.builders import ClusterQueue, FlavorQuotas
from tests.integration.multikueue.dispatch_harness import (
    ALL_AT_ONCE,
    CLUSTER_QUEUES,
    CONFIGS,
    Fleet,
    conditions_of,
)
from tests.integration.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONDITION = "MultiKueueManagerQuotaAutomation"


async def quotas_and_condition(mk: Fleet) -> tuple[dict[str, Any], dict[str, Any] | None]:
    cq = await mk.manager.get(CLUSTER_QUEUES, f"cq-{mk.suffix}")
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    quotas = {r["name"]: parse_quantity(r["nominalQuota"]) for r in resources}
    return quotas, conditions_of(cq).get(CONDITION)


async def wait_for(mk: Fleet, reason: str, quotas: dict[str, Any] | None = None) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        have, condition = await quotas_and_condition(mk)
        if condition is None or condition["reason"] != reason:
            return None
        if quotas is not None and have != {k: parse_quantity(v) for k, v in quotas.items()}:
            return None
        return condition

    return await eventually(probe, timeout=30.0, what=f"quota automation {reason} {quotas}")


async def worker_queue(mk: Fleet, index: int, quotas: dict[str, str]) -> None:
    queue = ClusterQueue(f"cq-{mk.suffix}").namespace_selector()
    queue.resource_group(FlavorQuotas("default", quotas))
    await mk.create(mk.workers[index], CLUSTER_QUEUES, queue.obj())


async def test_manager_quotas_follow_the_workers_once_automation_is_requested(mk: Fleet) -> None:
    await worker_queue(mk, 0, {"cpu": "2"})
    await worker_queue(mk, 1, {"cpu": "1200m"})
    await mk.start(ALL_AT_ONCE, quota_automation=True)
    # Not requested yet: the manager's own quota (8 CPUs) stands.
    not_requested = await wait_for(mk, "NotRequested", {"cpu": "8"})
    assert not_requested["status"] == "False"

    await mk.manager.patch(CONFIGS, mk.check, {"spec": {"quotaManagement": "Automated"}})
    automated = await wait_for(mk, "QuotaAutomated", {"cpu": "3200m"})
    assert automated["status"] == "True"
    assert automated["message"] == (
        "ClusterQueue quota is automatically managed based on MultiKueue workers."
    )

    # A worker's quota grows: the next resync follows it.
    group = {"coveredResources": ["cpu"], "flavors": [FlavorQuotas("default", {"cpu": 3}).obj()]}
    await mk.workers[1].patch(
        CLUSTER_QUEUES, f"cq-{mk.suffix}", {"spec": {"resourceGroups": [group]}}
    )
    await wait_for(mk, "QuotaAutomated", {"cpu": "5"})


async def test_a_worker_resource_the_manager_does_not_cover_is_refused_by_name(mk: Fleet) -> None:
    await worker_queue(mk, 0, {"cpu": "2", "example.com/fpga": "1"})
    await mk.start(ALL_AT_ONCE, quota_automation=True)
    await mk.manager.patch(CONFIGS, mk.check, {"spec": {"quotaManagement": "Automated"}})
    refused = await wait_for(mk, "UnsupportedConfiguration", {"cpu": "8"})
    assert refused["message"] == (
        "manager-side coveredResources is missing resources configured on workers: "
        "[example.com/fpga]"
    )


async def test_a_disconnected_worker_is_left_out_of_the_sum(mk: Fleet) -> None:
    await worker_queue(mk, 0, {"cpu": "2"})
    await worker_queue(mk, 1, {"cpu": "5"})
    await mk.start(ALL_AT_ONCE, quota_automation=True)
    await mk.manager.patch(CONFIGS, mk.check, {"spec": {"quotaManagement": "Automated"}})
    await wait_for(mk, "QuotaAutomated", {"cpu": "7"})
    await mk.cut_off(1)
    await wait_for(mk, "QuotaAutomated", {"cpu": "2"})
    await mk.reconnect(1)
    await wait_for(mk, "QuotaAutomated", {"cpu": "7"})
