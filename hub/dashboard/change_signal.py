"""One wake-up for every open stream when something the dashboard shows changed.

Streams used to look for changes every half second; a change then waited up to that long
before its build even began. `ChangeSignal` counts changes and wakes whoever waits:
the hub's cache handlers call `changed` (through `source.ChangeCount`), and what has no
events to subscribe to — the worker connections, which come and go with their
MultiKueueClusters — is sampled by `sample` every `sample_seconds` while a stream waits.
A wake-up says only "something moved": the stream asks `streams.SharedViews` for its
view, which is rebuilt only if that view's own inputs moved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable

DEFAULT_SAMPLE_SECONDS = 0.1


class ChangeSignal:
    """A change count and the waiters it wakes (all on the hub's loop)."""

    def __init__(
        self,
        sampled: Callable[[], Hashable] | None = None,
        *,
        sample_seconds: float = DEFAULT_SAMPLE_SECONDS,
    ) -> None:
        self.count = 0
        """Changes so far; a waiter passes the count it has seen."""
        self._sampled = sampled
        self.sample_seconds = sample_seconds
        self._wake: asyncio.Event | None = None
        self._waiting = 0

    def changed(self) -> None:
        """Count one change and wake every waiter (cheap: it runs in informer handlers)."""
        self.count += 1
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def wait(self, seen: int, timeout: float) -> int:
        """Until the count differs from `seen` or `timeout` seconds passed; the count."""
        if self.count != seen or timeout <= 0:
            return self.count
        if self._wake is None:
            self._wake = asyncio.Event()
        wake = self._wake
        self._waiting += 1
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await wake.wait()
        finally:
            self._waiting -= 1
        return self.count

    async def sample(self) -> None:
        """Until cancelled: every `sample_seconds`, while anyone waits, a change of the
        sampled value counts as a change. Returns at once when nothing is sampled."""
        if self._sampled is None:
            return
        last = self._sampled()
        while True:
            await asyncio.sleep(self.sample_seconds)
            if not self._waiting:
                continue
            value = self._sampled()
            if value != last:
                last = value
                self.changed()
