"""The changes a window makes, and when each one showed up at the open streams.

Each change is two writes, one per kind of input the dashboard reads: a new Workload on
the manager (it lands pending, newest first, so the workloads view's rows show it) and a
new CPU figure in a WorkerCapacity report (the fleet view's bars show it), each change on
the next worker's, so a figure stays up for `workers` changes and is never overwritten
before a view could show it.
Each write carries a marker the bench can find in an event's bytes; a change's latency
is from its write's answer to the first event holding the marker at each stream of that
view (`DashboardStream`). Without streams the same writes still run, so the hub's own
work for them is in both windows and the difference is the dashboard's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from bench.dashboard.fleet_objects import DashboardFleet
from bench.dashboard.stream_client import DashboardStream
from core.api.registry import kind_info
from core.kube.client import KubeClient, PatchType

WORKLOADS = kind_info("Workload")
REPORTS = kind_info("WorkerCapacity")
REQUESTED_BASE_MILLICPU = 1_000_000
"""Marker values of the reports' requested CPU (well below any report's allocatable)."""


@dataclass(frozen=True, slots=True)
class ChangePlan:
    changes: int = 50
    interval_s: float = 0.8
    tail_s: float = 5.0
    """Seconds after the last change for late events; part of every window."""

    @property
    def window_s(self) -> float:
        return self.changes * self.interval_s + self.tail_s


def workload_marker(name: str) -> bytes:
    return f'"name":"{name}"'.encode()


def report_marker(millicpu: int) -> bytes:
    return f'"usedText":"{millicpu}m"'.encode()


async def make_changes(
    manager: KubeClient,
    worker: KubeClient,
    fleet: DashboardFleet,
    plan: ChangePlan,
    label: str,
    round_index: int,
    streams: Sequence[DashboardStream],
) -> None:
    """`plan.changes` changes at `plan.interval_s`, then the tail; returns at the window's end."""
    started = time.monotonic()
    for index in range(plan.changes):
        delay = started + index * plan.interval_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        name = f"probe-{label}-{index:03d}"
        millicpu = REQUESTED_BASE_MILLICPU + round_index * 1000 + index
        await _timed_write(
            [s for s in streams if s.stats.view == "workloads"],
            workload_marker(name),
            manager.create(WORKLOADS, fleet.workload(name, index), namespace=fleet.namespace),
        )
        await _timed_write(
            [s for s in streams if s.stats.view == "fleet"],
            report_marker(millicpu),
            worker.patch(
                REPORTS,
                fleet.worker_name(index % fleet.workers),
                fleet.report_status(millicpu),
                patch_type=PatchType.MERGE,
                subresource="status",
            ),
        )
    remaining = started + plan.window_s - time.monotonic()
    if remaining > 0:
        await asyncio.sleep(remaining)


async def _timed_write(
    streams: Sequence[DashboardStream], marker: bytes, write: Awaitable[object]
) -> None:
    """Await the marker from before the write (an event can beat the write's answer), then
    restart its clock at the answer for every stream still waiting."""
    for stream in streams:
        stream.await_marker(marker)
    await write
    answered = time.monotonic()
    for stream in streams:
        if marker in stream.stats.awaited:
            stream.stats.awaited[marker] = answered
