"""The per-cluster request budget: burst first, then qps; concurrent callers queue fairly."""

from __future__ import annotations

import asyncio

import pytest

from core.kube.rate_limit import TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_serves_a_burst_then_spaces_requests_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=5, burst=3, clock=clock)

    delays = [bucket.reserve() for _ in range(6)]

    assert delays[:3] == [0.0, 0.0, 0.0]
    # Reservations queue up: each waiter is one token-interval (200 ms) behind the last.
    assert delays[3:] == pytest.approx([0.2, 0.4, 0.6])


def test_tokens_refill_with_time_but_never_beyond_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    assert bucket.available() == pytest.approx(0.0)

    clock.now += 0.15
    assert bucket.available() == pytest.approx(1.5)

    clock.now += 60  # a long idle spell
    assert bucket.available() == pytest.approx(2.0)
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])


def test_the_long_run_rate_never_exceeds_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=20, burst=5, clock=clock)
    granted_at = []
    for _ in range(105):
        delay = bucket.reserve()
        granted_at.append(clock.now + delay)
        clock.now += 0.001  # callers arrive far faster than the budget
    span = granted_at[-1] - granted_at[0]
    # 105 requests: 5 free, the other 100 need 100 tokens at 20/s = 5 s.
    assert span == pytest.approx(5.0, abs=0.01)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=0, burst=1)
    with pytest.raises(ValueError):
        TokenBucket(qps=1, burst=0)


async def test_acquire_really_waits_for_the_token() -> None:
    bucket = TokenBucket(qps=50, burst=1)
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(bucket.acquire() for _ in range(4)))
    # One free token, three more at 20 ms each.
    assert loop.time() - start >= 0.055
