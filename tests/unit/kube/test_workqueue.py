"""Work queue semantics: dedup, one worker per key, re-queue after processing, backoff, delays."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from core.kube.backoff import ExponentialBackoff
from core.kube.rate_limit import TokenBucket
from core.kube.workqueue import KeyRateLimiter, ShutDown, WorkQueue


async def test_a_key_added_many_times_while_queued_is_handed_out_once() -> None:
    queue: WorkQueue[str] = WorkQueue("dedup")
    for _ in range(5):
        queue.add("ns/a")
    queue.add("ns/b")
    queue.add("ns/a")

    assert len(queue) == 2
    assert await queue.get() == "ns/a"
    assert await queue.get() == "ns/b"
    assert len(queue) == 0


async def test_a_key_re_added_while_processing_is_processed_again_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue("reprocess")
    queue.add("k")
    key = await queue.get()

    queue.add("k")  # a change arrived while a worker holds the key
    queue.add("k")
    assert len(queue) == 0, "must not be handed to a second worker while in process"

    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "k"
    queue.done("k")
    assert len(queue) == 0


async def test_no_two_workers_ever_process_the_same_key_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue("exclusive")
    active: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []

    async def handle(key: str) -> None:
        if key in active:
            overlaps.append(key)
        active.add(key)
        await asyncio.sleep(0.005)
        processed.append(key)
        active.discard(key)

    async def producer() -> None:
        for round_ in range(20):
            for key in ("a", "b", "c"):
                queue.add(key)
            await asyncio.sleep(0.002 if round_ % 2 else 0)
        await queue.drained()
        queue.shut_down()

    async with asyncio.timeout(20):
        async with asyncio.TaskGroup() as group:
            group.create_task(queue.run_workers(handle, workers=4))
            group.create_task(producer())

    assert overlaps == []
    assert {"a", "b", "c"} <= set(processed)
    # Dedup collapses bursts: far fewer runs than the 60 adds.
    assert len(processed) < 60


async def test_the_last_add_is_always_processed_after_it_happened() -> None:
    queue: WorkQueue[str] = WorkQueue("latest")
    state = {"version": 0}
    seen: list[int] = []

    async def handle(key: str) -> None:
        seen.append(state["version"])
        await asyncio.sleep(0.01)

    async def changes() -> None:
        for version in range(1, 6):
            state["version"] = version
            queue.add("obj")
            await asyncio.sleep(0.004)
        await queue.drained()
        queue.shut_down()

    async with asyncio.timeout(10):
        async with asyncio.TaskGroup() as group:
            group.create_task(queue.run_workers(handle, workers=2))
            group.create_task(changes())

    assert seen[-1] == 5


def test_per_key_backoff_grows_exponentially_until_forgotten() -> None:
    limiter: KeyRateLimiter[str] = KeyRateLimiter(
        ExponentialBackoff(base_seconds=0.01, cap_seconds=0.1)
    )
    delays = [limiter.when("a") for _ in range(6)]
    assert delays == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.1, 0.1])
    assert limiter.retries("a") == 6
    assert limiter.when("b") == pytest.approx(0.01), "keys back off independently"

    limiter.forget("a")
    assert limiter.retries("a") == 0
    assert limiter.when("a") == pytest.approx(0.01)


def test_overall_bucket_bounds_the_retry_rate_of_all_keys() -> None:
    now = [0.0]
    limiter: KeyRateLimiter[str] = KeyRateLimiter(
        ExponentialBackoff(base_seconds=0.001, cap_seconds=1.0),
        overall=TokenBucket(qps=10, burst=2, clock=lambda: now[0]),
    )
    delays = [limiter.when(f"k{i}") for i in range(4)]
    # Two tokens of burst, then one every 100 ms.
    assert delays == pytest.approx([0.001, 0.001, 0.1, 0.2])


async def test_add_rate_limited_returns_the_key_after_its_backoff() -> None:
    queue: WorkQueue[str] = WorkQueue(
        "retry", KeyRateLimiter(ExponentialBackoff(base_seconds=0.05, cap_seconds=1.0))
    )
    loop = asyncio.get_running_loop()
    queue.add_rate_limited("k")  # 50 ms
    assert len(queue) == 0
    start = loop.time()
    assert await asyncio.wait_for(queue.get(), 2) == "k"
    first = loop.time() - start
    queue.done("k")

    queue.add_rate_limited("k")  # 100 ms
    start = loop.time()
    assert await asyncio.wait_for(queue.get(), 2) == "k"
    second = loop.time() - start

    assert first >= 0.045
    assert second >= 0.095
    assert queue.retries("k") == 2


async def test_add_after_delays_and_the_earlier_of_two_delays_wins() -> None:
    queue: WorkQueue[str] = WorkQueue("delays")
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue.add_after("k", 5.0)
    queue.add_after("k", 0.05)  # earlier: replaces the 5 s timer
    queue.add_after("k", 3.0)  # later: ignored

    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 2) == "k"
    assert 0.045 <= loop.time() - start < 2
    queue.done("k")
    await asyncio.sleep(0.1)
    assert len(queue) == 0, "the replaced timers must not fire later"


async def test_a_failing_handler_is_retried_with_backoff_until_it_succeeds() -> None:
    queue: WorkQueue[str] = WorkQueue(
        "failing", KeyRateLimiter(ExponentialBackoff(base_seconds=0.01, cap_seconds=0.05))
    )
    attempts: list[float] = []
    loop = asyncio.get_running_loop()

    async def handle(key: str) -> None:
        attempts.append(loop.time())
        if len(attempts) < 4:
            raise RuntimeError("apiserver said no")
        queue.shut_down()

    queue.add("k")
    async with asyncio.timeout(5):
        await queue.run_workers(handle, workers=2)

    assert len(attempts) == 4
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[0] >= 0.009 and gaps[1] >= 0.019 and gaps[2] >= 0.039
    assert queue.retries("k") == 0, "success forgets the key's backoff"


async def test_shut_down_hands_out_queued_keys_then_raises_and_ignores_new_adds() -> None:
    queue: WorkQueue[str] = WorkQueue("shutdown")
    queue.add("a")
    queue.add_after("late", 0.01)
    queue.shut_down()
    queue.add("b")

    assert await queue.get() == "a"
    queue.done("a")
    await asyncio.sleep(0.03)
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_wakes_idle_workers() -> None:
    queue: WorkQueue[str] = WorkQueue("idle")

    async def handle(key: str) -> None:
        raise AssertionError("nothing was queued")

    async def stop_soon() -> None:
        await asyncio.sleep(0.02)
        queue.shut_down()

    async with asyncio.timeout(2):
        async with asyncio.TaskGroup() as group:
            group.create_task(queue.run_workers(handle, workers=3))
            group.create_task(stop_soon())


async def test_a_cancelled_waiter_passes_its_wake_up_on() -> None:
    queue: WorkQueue[str] = WorkQueue("cancel")
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("k")
    first.cancel()  # woken, but cancelled before it could take the key
    await asyncio.sleep(0)
    assert await asyncio.wait_for(second, 1) == "k"
    with pytest.raises(asyncio.CancelledError):
        await first
