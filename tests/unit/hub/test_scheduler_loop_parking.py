"""The scheduler loop parks blocked heads until something changes; it does not spin."""

from __future__ import annotations

import asyncio

import pytest

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from core.manager.engine_host import EngineHost
from core.manager.scheduler_loop import SchedulerLoop

pytestmark = pytest.mark.asyncio


def host_with_queue(strategy: QueueingStrategy) -> EngineHost:
    host = EngineHost(EngineConfig(release_quota_on_eviction=False), clock=ManualClock())
    engine = host.engine
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            queueing_strategy=strategy,
            preemption=ClusterQueuePreemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY),
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=4000),)
                        ),
                    ),
                ),
            ),
        )
    )
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return host


def add(host: EngineHost, name: str, cpu: int, created: float, priority: int = 0) -> None:
    workload = Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        creation_time=created,
        priority=priority,
        pod_sets=(PodSet(count=1, requests={"cpu": cpu}),),
    )
    host.publish(host.engine.add_workload(workload))


async def until(predicate: object, seconds: float = 2.0) -> None:
    assert callable(predicate)
    async with asyncio.timeout(seconds):
        while not predicate():
            await asyncio.sleep(0.005)


async def test_a_blocked_strict_fifo_head_costs_one_cycle_until_quota_frees() -> None:
    host = host_with_queue(QueueingStrategy.STRICT_FIFO)
    loop = SchedulerLoop(host)
    add(host, "running", 3000, 1)
    task = asyncio.create_task(loop.run())
    try:
        await until(lambda: host.engine.cluster_queue_usage("cq"))
        add(host, "big", 2000, 2)
        await asyncio.sleep(0.3)  # with retries every 1-100 ms this would be several cycles
        blocked_cycles = loop.cycles
        assert blocked_cycles <= 3
        await asyncio.sleep(0.2)
        assert loop.cycles == blocked_cycles  # parked: nothing happened, nothing runs
        host.finish("ns/running", succeeded=True, message="done")
        await until(lambda: host.engine.queued_workloads("cq") == [])
        status = host.engine.workload_status("ns/big")
        assert status is not None and status.admission is not None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_preemptor_waits_for_its_victim_without_retrying() -> None:
    host = host_with_queue(QueueingStrategy.BEST_EFFORT_FIFO)
    loop = SchedulerLoop(host)
    add(host, "low", 3000, 1, priority=1)
    task = asyncio.create_task(loop.run())
    try:
        await until(lambda: host.engine.cluster_queue_usage("cq"))
        add(host, "high", 3000, 2, priority=10)
        status_of = host.engine.workload_status
        await until(
            lambda: (c := status_of("ns/low")) is not None and c.condition("Evicted") is not None
        )
        await asyncio.sleep(0.3)
        waiting_cycles = loop.cycles
        await asyncio.sleep(0.2)
        assert loop.cycles == waiting_cycles  # the victim has not stopped yet: no retries
        host.complete_eviction("ns/low")
        await until(lambda: (c := status_of("ns/high")) is not None and c.admission is not None)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
