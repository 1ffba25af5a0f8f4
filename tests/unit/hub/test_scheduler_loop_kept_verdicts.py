"""Heads decided by kept verdicts cost the loop no admission cycle, and lose no wake-up."""

from __future__ import annotations

import asyncio

import pytest

from core.engine.model import QueueingStrategy
from core.manager.scheduler_loop import SchedulerLoop
from tests.unit.hub.test_scheduler_loop_parking import add, host_with_queue, until

pytestmark = pytest.mark.asyncio


async def test_alike_arrivals_into_a_full_queue_cost_one_cycle_and_a_finish_admits_them() -> None:
    host = host_with_queue(QueueingStrategy.BEST_EFFORT_FIFO)
    loop = SchedulerLoop(host)
    add(host, "running", 4000, 1)
    task = asyncio.create_task(loop.run())
    try:
        await until(lambda: host.engine.cluster_queue_usage("cq"))
        first_cycles = loop.cycles
        for i in range(20):
            add(host, f"waiting-{i}", 1000, 2 + i)
            await asyncio.sleep(0.01)  # one wake-up each, as informer events come
        await until(lambda: len(host.engine.inadmissible_workloads("cq")) == 20)
        assert loop.cycles - first_cycles == 1  # the first arrival's verdict serves the rest
        assert loop.requeue_rounds >= 19
        host.finish("ns/running", succeeded=True, message="done")
        await until(
            lambda: (
                len(host.engine.cluster_queue_usage("cq")) > 0
                and all(
                    (s := host.engine.workload_status(f"ns/waiting-{i}")) is not None
                    and s.admission is not None
                    for i in range(4)
                )
            )
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
