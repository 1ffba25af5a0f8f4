"""Exponential backoff delays: base * factor**attempt, capped, optionally jittered.

One pure function serves the watch reconnect loop, the work queue's per-key retries and
leader election's retry period, so "how long until the next try" is tested in one place.
Jitter (a random fraction added on top, like client-go's wait.Jitter) keeps many clients
that failed together from retrying together.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """Delay before retry number `attempt` (0 = first retry): base, 2*base, 4*base ... cap."""

    base_seconds: float
    cap_seconds: float
    factor: float = 2.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if self.base_seconds <= 0 or self.cap_seconds < self.base_seconds:
            raise ValueError("need 0 < base_seconds <= cap_seconds")
        if self.factor < 1 or self.jitter < 0:
            raise ValueError("need factor >= 1 and jitter >= 0")

    def delay(self, attempt: int, *, rng: random.Random | None = None) -> float:
        try:
            raw = min(self.cap_seconds, self.base_seconds * self.factor ** max(0, attempt))
        except OverflowError:  # a key failing for days: factor**attempt leaves float range
            raw = self.cap_seconds
        if self.jitter:
            raw += raw * self.jitter * (rng or random).random()
        return raw
