"""Events stay within their own budget, yield to the client's other writes, and never lag:
a bounded backlog whose oldest entries are dropped and counted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

from core.kube.events import EventRecorder, ObjectReference
from core.kube.rate_limit import TokenBucket

pytestmark = pytest.mark.asyncio


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingClient:
    """Stands in for KubeClient's write calls; keeps what was sent, in order."""

    def __init__(self, clock: Clock) -> None:
        self.rate_limiter = TokenBucket(50, 100, clock=clock)
        self.log = structlog.get_logger("test")
        self.created: list[str] = []
        self.patched: list[str] = []

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self.created.append(body.note)
        return body

    async def patch(self, resource: Any, name: str, body: Any, **_: Any) -> Any:
        self.patched.append(name)
        return body


def ref(name: str) -> ObjectReference:
    return ObjectReference(kind="Workload", name=name, namespace="ns", uid=f"uid-{name}")


def recorder(client: RecordingClient, clock: Clock, **kwargs: Any) -> EventRecorder:
    return EventRecorder(
        client,  # type: ignore[arg-type]
        reporting_controller="fleetq.dev/test",
        reporting_instance="t",
        clock=clock,
        **kwargs,
    )


async def test_the_backlog_is_bounded_and_the_oldest_events_are_dropped() -> None:
    clock = Clock()
    client = RecordingClient(clock)
    events = recorder(client, clock, max_pending=3)
    for index in range(5):
        events.record(ref(f"w{index}"), "QuotaReserved", f"note {index}")
    # Repeats of a waiting event aggregate and take no extra room.
    events.record(ref("w4"), "QuotaReserved", "note 4")
    assert events.pending == 3
    assert events.stats.dropped == 2
    await events.flush()
    assert client.created == ["note 2", "note 3", "note 4"]
    assert events.pending == 0


async def test_periodic_writes_keep_to_the_event_budget() -> None:
    clock = Clock()
    client = RecordingClient(clock)
    events = recorder(client, clock, qps=2.0, burst=3, flush_interval_seconds=0.01)
    for index in range(10):
        events.record(ref(f"w{index}"), "Admitted", f"note {index}")
    task = asyncio.create_task(events.run())
    await asyncio.sleep(0.1)  # several flush intervals, no time passes for the budget
    assert client.created == ["note 0", "note 1", "note 2"]
    clock.now += 1.0  # two more tokens
    await asyncio.sleep(0.1)
    assert len(client.created) == 5
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_events_wait_while_the_client_has_requests_queued() -> None:
    clock = Clock()
    client = RecordingClient(clock)
    events = recorder(client, clock)
    events.record(ref("w"), "Admitted", "note")
    assert events.writable_now() == 1
    for _ in range(101):  # the client's burst is spent: status writes are waiting
        client.rate_limiter.reserve()
    assert events.writable_now() == 0
    clock.now += 1.0
    assert events.writable_now() == 1
