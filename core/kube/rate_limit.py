"""A client-side request budget per cluster: a token bucket like client-go's (qps + burst).

The bucket starts full (`burst` tokens) and refills at `qps` tokens per second. Each request
takes one token; when none is left, the caller waits until its token has accrued. Waiters
reserve their token up front (the balance may go negative), so concurrent callers are
served in arrival order and the long-run rate never exceeds `qps`, however many tasks share
the client. `reserve` is pure arithmetic over an injectable clock, so it is unit-tested
without sleeping.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` requests per second on average, at most `burst` at once after an idle spell."""

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take a token now; return how many seconds the caller must wait before using it."""
        now = self._clock()
        self._refill(now)
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def available(self) -> float:
        """Tokens that could be taken right now without waiting (negative: queue ahead)."""
        self._refill(self._clock())
        return self._tokens

    async def acquire(self) -> None:
        """Wait for a token. Cancelling the wait does not give the token back (as client-go)."""
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
