"""Waiting for a cluster to show something, from synchronous code (set-up, demo, e2e tests)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def until(probe: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """Poll `probe` until it returns something truthy; AssertionError names what never came."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last={last!r}")
