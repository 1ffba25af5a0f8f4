"""Streams are woken by changes, a burst of them is one build, and builds are spaced."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from core.manager.informer_set import Cache
from hub.dashboard.change_signal import ChangeSignal
from hub.dashboard.server import Dashboard
from hub.dashboard.source import HubSource, ViewInput, WorkerSummary
from hub.dashboard.streams import SharedViews, ViewKey
from tests.unit.hub.dashboard.doubles import NOW, GrantsAuth, ListSource, RecordedActions, workload
from tests.unit.hub.dashboard.test_shared_views import FakeCache

POLL_SECONDS = 5.0
"""The streams' fallback poll in these tests: far longer than any wake-up they expect."""
COALESCE_SECONDS = 0.2
TOKEN = "admin-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


async def test_a_waiter_wakes_on_a_change_not_at_its_timeout() -> None:
    signal = ChangeSignal()
    waiter = asyncio.create_task(signal.wait(signal.count, timeout=POLL_SECONDS))
    await asyncio.sleep(0.01)
    began = time.monotonic()
    signal.changed()
    assert await asyncio.wait_for(waiter, 1.0) == 1
    assert time.monotonic() - began < 0.5


async def test_a_change_already_counted_returns_at_once_and_none_waits_out_the_timeout() -> None:
    signal = ChangeSignal()
    signal.changed()
    assert await asyncio.wait_for(signal.wait(0, timeout=POLL_SECONDS), 0.5) == 1
    began = time.monotonic()
    assert await signal.wait(1, timeout=0.05) == 1
    assert time.monotonic() - began >= 0.04


async def test_a_sampled_value_that_moves_wakes_waiters_and_is_not_read_without_them() -> None:
    value, reads = ["a"], [0]

    def sampled() -> Hashable:
        reads[0] += 1
        return value[0]

    signal = ChangeSignal(sampled, sample_seconds=0.01)
    sampling = asyncio.create_task(signal.sample())
    try:
        await asyncio.sleep(0.1)
        assert reads[0] == 1  # read once at the start; nobody waited since
        waiter = asyncio.create_task(signal.wait(signal.count, timeout=POLL_SECONDS))
        await asyncio.sleep(0.05)
        value[0] = "b"
        assert await asyncio.wait_for(waiter, 1.0) == 1
    finally:
        sampling.cancel()


def hub_source() -> tuple[HubSource, dict[str, FakeCache]]:
    caches = {name: FakeCache() for name in ("cqs", "lqs", "cohorts", "flavors", "wls")}
    source = HubSource(
        cluster_queues=cast(Cache, caches["cqs"]),
        local_queues=cast(Cache, caches["lqs"]),
        cohorts=cast(Cache, caches["cohorts"]),
        resource_flavors=cast(Cache, caches["flavors"]),
        workloads=cast(Cache, caches["wls"]),
        workload_priority_values={},
        engine=cast(Any, None),
        workers=lambda: [WorkerSummary("w1", True, "Active", "", None, None)],
    )
    return source, caches


def test_hub_source_changes_count_every_cache_event() -> None:
    source, caches = hub_source()
    caches["wls"].change({})
    caches["cqs"].change({})
    assert source.changes.count == 2


def test_hub_source_reads_one_workload_by_its_key() -> None:
    source, caches = hub_source()
    caches["wls"].store.upsert(workload("ns", "one"))
    caches["wls"].store.upsert(workload("other", "one"))
    found = source.workload("ns", "one")
    assert found is not None and found["metadata"]["namespace"] == "ns"
    assert source.workload("ns", "two") is None


def test_a_build_is_followed_by_a_pause_a_few_times_its_duration() -> None:
    clock = [100.0]
    counts = [0]

    def build(key: ViewKey) -> dict[str, Any]:
        clock[0] += 0.1  # this build takes 0.1 s
        return {"counts": counts[0]}

    views = SharedViews(
        build,
        version=lambda _inputs: counts[0],
        min_interval=0.05,
        spacing=4.0,
        clock=lambda: clock[0],
    )
    key: ViewKey = ("queues", "", "")
    first = views.get(key)
    assert views.held_for(key) == 0.0  # nothing moved: nothing to wait for
    counts[0] += 1
    clock[0] += 0.1
    assert views.get(key) is first
    # 4 x 0.1 s from the build's start (100.0), asked at 100.2 (the build's 0.1 s, then 0.1 s)
    assert abs(views.held_for(key) - 0.2) < 1e-9
    clock[0] += 0.2
    assert views.held_for(key) == 0.0
    assert views.get(key).body == {"counts": 1}


async def test_current_waits_out_the_pause_and_then_builds() -> None:
    counts = [0]

    def build(key: ViewKey) -> dict[str, Any]:
        time.sleep(0.02)
        return {"counts": counts[0]}

    views = SharedViews(build, version=lambda _inputs: counts[0], min_interval=0.0, spacing=4.0)
    key: ViewKey = ("queues", "", "")
    began = time.monotonic()
    views.get(key)
    counts[0] += 1
    assert (await views.current(key)).body == {"counts": 1}
    assert time.monotonic() - began >= 0.08


@dataclass
class Counted:
    """A dashboard source's change counts, bumped by the test as a cache's handler would."""

    signal: ChangeSignal = field(default_factory=ChangeSignal)
    counts: dict[ViewInput, int] = field(default_factory=lambda: dict.fromkeys(ViewInput, 0))

    def version(self, inputs: Iterable[ViewInput]) -> Hashable:
        return tuple(self.counts[i] for i in inputs)

    def change(self, which: ViewInput) -> None:
        self.counts[which] += 1
        self.signal.changed()


@pytest_asyncio.fixture(loop_scope="function")
async def woken() -> AsyncIterator[tuple[TestClient, ListSource, Counted, Dashboard]]:  # type: ignore[type-arg]
    source = ListSource(wls=[workload("ns", "first")])
    counted = Counted()
    dashboard = Dashboard(
        source,
        GrantsAuth(tokens={TOKEN: "admin"}, grants={("admin", "list", "workloads", "*")}),
        RecordedActions(),
        push_seconds=POLL_SECONDS,
        now=lambda: NOW,
        version=counted.version,
        changes=counted.signal,
        coalesce_seconds=COALESCE_SECONDS,
    )
    dashboard.views.tick_seconds = 3600.0  # no tick of the timed views during a test
    async with TestClient(TestServer(dashboard.app())) as client:
        yield client, source, counted, dashboard


async def _next_view(response: Any) -> bytes:
    while True:
        line = await asyncio.wait_for(response.content.readline(), POLL_SECONDS * 2)
        if line.startswith(b"data: "):
            return bytes(line)


async def test_a_stream_shows_a_change_a_coalescing_window_later_not_a_poll_later(
    woken: tuple[TestClient, ListSource, Counted, Dashboard],  # type: ignore[type-arg]
) -> None:
    client, source, counted, _ = woken
    response = await client.get("/api/stream?view=workloads", headers=HEADERS)
    assert b'"first"' in await _next_view(response)
    source.wls.append(workload("ns", "second"))
    began = time.monotonic()
    counted.change(ViewInput.WORKLOADS)
    assert b'"second"' in await _next_view(response)
    took = time.monotonic() - began
    assert COALESCE_SECONDS * 0.9 <= took < POLL_SECONDS / 5
    response.close()


async def test_a_burst_of_changes_in_the_window_is_one_build(
    woken: tuple[TestClient, ListSource, Counted, Dashboard],  # type: ignore[type-arg]
) -> None:
    client, source, counted, dashboard = woken
    response = await client.get("/api/stream?view=workloads", headers=HEADERS)
    await _next_view(response)
    await asyncio.sleep(COALESCE_SECONDS * 1.5)  # past the pause after the stream's first build
    builds = dashboard.views.builds
    for index in range(5):
        source.wls.append(workload("ns", f"burst-{index}"))
        counted.change(ViewInput.WORKLOADS)
        await asyncio.sleep(0.01)
    shown = await _next_view(response)
    assert b'"burst-4"' in shown
    assert dashboard.views.builds == builds + 1
    response.close()


async def test_a_change_to_inputs_the_view_does_not_read_sends_nothing(
    woken: tuple[TestClient, ListSource, Counted, Dashboard],  # type: ignore[type-arg]
) -> None:
    client, source, counted, dashboard = woken
    response = await client.get("/api/stream?view=workloads", headers=HEADERS)
    await _next_view(response)
    builds = dashboard.views.builds
    counted.change(ViewInput.RESOURCE_FLAVORS)
    await asyncio.sleep(COALESCE_SECONDS * 2)
    assert dashboard.views.builds == builds
    source.wls.append(workload("ns", "later"))
    counted.change(ViewInput.WORKLOADS)
    assert b'"later"' in await _next_view(response)
    response.close()
