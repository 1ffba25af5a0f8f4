"""Waiting for a real apiserver to show something: one poll loop for the integration tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 30.0, what: str = ""
) -> T:
    """Poll `probe` every 0.1 s until it returns something truthy, and return that; fail
    naming `what` (or the probe) and the last answer after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}; last={last!r}")
