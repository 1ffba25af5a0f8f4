"""Time as the engine sees it: injected, so tests and the simulator control it exactly."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Anything with `now()` in seconds; the engine never reads the wall clock itself."""

    def now(self) -> float: ...


class ManualClock:
    """A clock that moves only when told to (tests, simulation)."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards by {seconds}s")
        self._now += seconds
        return self._now

    def set(self, when: float) -> None:
        if when < self._now:
            raise ValueError(f"cannot move a clock back from {self._now} to {when}")
        self._now = when


class WallClock:
    """Real time, for a live controller."""

    __slots__ = ()

    def now(self) -> float:
        return time.time()
