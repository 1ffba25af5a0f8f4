"""A controller work queue with client-go's guarantees, for asyncio.

- A key waiting in the queue is held once, however often it is added (de-duplication).
- A key is handed to at most one worker at a time. Added again while being processed,
  it is queued once more when that worker calls `done`, so the latest state is always
  reconciled and never by two workers at once.
- Failed keys come back after a per-key exponential backoff (`add_rate_limited`), capped
  and optionally also bounded by an overall token bucket; `forget` resets a key's backoff
  once it succeeds.
- `add_after` delays an add; a key delayed twice keeps the earlier time.
- `shut_down` stops accepting keys and cancels delayed adds; workers finish the keys
  already queued, then `get` raises `ShutDown`. `run_workers` wraps all of this.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import structlog

from core.kube.backoff import ExponentialBackoff
from core.kube.rate_limit import TokenBucket

K = TypeVar("K", bound=Hashable)

DEFAULT_ITEM_BACKOFF = ExponentialBackoff(base_seconds=0.005, cap_seconds=1000.0)


class ShutDown(Exception):
    """The queue was shut down and has nothing left to hand out."""


class KeyRateLimiter(Generic[K]):
    """How long a failing key waits before its next try (client-go's default limiter).

    The per-key exponential backoff grows with each failure of that key; the optional
    overall bucket bounds the retry rate of all keys together. The longer wait wins.
    """

    def __init__(
        self,
        backoff: ExponentialBackoff = DEFAULT_ITEM_BACKOFF,
        overall: TokenBucket | None = None,
    ) -> None:
        self.backoff = backoff
        self.overall = overall
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = self.backoff.delay(failures)
        if self.overall is not None:
            delay = max(delay, self.overall.reserve())
        return delay

    def retries(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)


class WorkQueue(Generic[K]):
    """De-duplicating, rate-limited, delay-capable queue of keys (see module docstring)."""

    def __init__(self, name: str = "", rate_limiter: KeyRateLimiter[K] | None = None) -> None:
        self.name = name
        self.rate_limiter: KeyRateLimiter[K] = rate_limiter or KeyRateLimiter()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._delayed: dict[K, asyncio.TimerHandle] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._idle = asyncio.Event()
        self._idle.set()
        self._shutting_down = False
        self.log = structlog.get_logger("core.kube").bind(queue=name)

    def __len__(self) -> int:
        """Keys waiting to be handed out (not counting those in process or delayed)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._idle.clear()
        self._wake_one()

    def add_after(self, key: K, delay_seconds: float) -> None:
        """Add `key` after a delay; an earlier pending delay for the same key wins."""
        if self._shutting_down:
            return
        if delay_seconds <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay_seconds
        pending = self._delayed.get(key)
        if pending is not None:
            if pending.when() <= due:
                return
            pending.cancel()
        self._delayed[key] = loop.call_at(due, self._fire_delayed, key)

    def add_rate_limited(self, key: K) -> None:
        """Add `key` after its backoff (which grows with every call until `forget`)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """The key succeeded: reset its backoff (does not remove it from the queue)."""
        self.rate_limiter.forget(key)

    def retries(self, key: K) -> int:
        return self.rate_limiter.retries(key)

    async def get(self) -> K:
        """The next key to process; call `done(key)` when finished with it."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # pass the wake-up on to another worker
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: K) -> None:
        """Processing of `key` ended; if it was added meanwhile, queue it again."""
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake_one()
        elif not self._queue and not self._processing:
            self._idle.set()

    def shut_down(self) -> None:
        """Accept no more keys, drop delayed ones; queued keys are still handed out."""
        self._shutting_down = True
        for handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def drained(self) -> None:
        """Wait until nothing is queued or being processed."""
        await self._idle.wait()

    async def run_workers(self, handler: Callable[[K], Awaitable[None]], workers: int = 1) -> None:
        """Process keys with `workers` concurrent tasks until the queue is shut down.

        A handler that raises gets its key re-added with backoff; one that returns gets
        its backoff forgotten. Cancelling this coroutine cancels the workers.
        """
        async with asyncio.TaskGroup() as group:
            for index in range(workers):
                group.create_task(self._worker(handler), name=f"{self.name}-worker-{index}")

    async def _worker(self, handler: Callable[[K], Awaitable[None]]) -> None:
        while True:
            try:
                key = await self.get()
            except ShutDown:
                return
            try:
                await handler(key)
            except Exception as error:
                self.log.warning(
                    "workqueue.retry", key=str(key), retries=self.retries(key), error=repr(error)
                )
                self.add_rate_limited(key)
            else:
                self.forget(key)
            finally:
                self.done(key)

    def _fire_delayed(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
