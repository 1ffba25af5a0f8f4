"""Live updates: what they cost the hub, and how many each user may hold.

Upstream KueueViz let any client open WebSockets without limit; here every open event
stream counts against its user, and one more than `per_user` is refused (429) until one
closes. The count is per authenticated user name, so one user's many tabs cannot starve
others.

Views are built on the hub's loop, and a workloads view of 10,000 Workloads takes
milliseconds to tens of milliseconds and is hundreds of kilobytes, so streams never build
for themselves: `SharedViews` builds a view only when its inputs changed (or, for views
showing durations, each tick), once for all streams and requests of that view, and
serializes it once (bench/dashboard measures it). Streams wait for a change
(`change_signal.ChangeSignal`) instead of polling, and a build is followed by a pause of a
few times its own duration before the next one of that view, so a storm of changes costs
the loop a bounded share however fast they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from hub.dashboard.source import ViewInput

DEFAULT_STREAMS_PER_USER = 4


class TooManyStreams(Exception):
    pass


class StreamLimiter:
    def __init__(self, per_user: int = DEFAULT_STREAMS_PER_USER) -> None:
        self.per_user = per_user
        self._open: dict[str, int] = {}

    def open_for(self, user: str) -> int:
        return self._open.get(user, 0)

    @contextlib.contextmanager
    def stream(self, user: str) -> Iterator[None]:
        if self._open.get(user, 0) >= self.per_user:
            raise TooManyStreams(user)
        self._open[user] = self._open.get(user, 0) + 1
        try:
            yield
        finally:
            left = self._open[user] - 1
            if left:
                self._open[user] = left
            else:
                del self._open[user]


ViewKey = tuple[str, str, str]
"""(view, namespace, name): what a view's body depends on besides its inputs. The caller's
access decides whether it may see the body, never what the body holds, so every stream
and request of one key shares one build."""

VIEW_INPUTS: dict[str, tuple[ViewInput, ...]] = {
    "fleet": (ViewInput.WORKERS, ViewInput.WORKLOADS),
    "queues": (ViewInput.COHORTS, ViewInput.CLUSTER_QUEUES, ViewInput.LOCAL_QUEUES),
    "workloads": (ViewInput.WORKLOADS, ViewInput.LOCAL_QUEUES, ViewInput.CLUSTER_QUEUES),
    "workload": (ViewInput.WORKLOADS, ViewInput.LOCAL_QUEUES, ViewInput.CLUSTER_QUEUES),
    "flavors": (ViewInput.RESOURCE_FLAVORS, ViewInput.WORKERS),
    "history": (),
}
"""What each view reads (views.py); a view is rebuilt only when one of these moved. The
Workload views name ClusterQueues too: a queue's change (its quota, say) can move the
engine's queue positions before any Workload event does."""
TIMED_VIEWS = frozenset({"fleet", "workloads", "workload", "history"})
"""Views showing durations up to now (waited, ran, a report's age), and the history (its
sampler's rings, filled on their own clock): also rebuilt each tick."""
DEFAULT_TICK_SECONDS = 5.0
BUILD_SPACING = 4.0
"""A view's next build starts no sooner than this many times its last build's duration
after that build started (the hub's controllers share the loop): at most a quarter of the
loop per view, however fast its inputs change."""


@dataclass(frozen=True, slots=True)
class BuiltView:
    """One build of a view: its body and the event that carries it, serialized once."""

    stamp: Hashable
    body: dict[str, Any] | None
    event: bytes


class SharedViews:
    """Builds each view once per change of its inputs, for every stream and request.

    A build's stamp is its inputs' version (`version`, e.g. `HubSource.version`) plus, for
    a timed view, the clock's tick; `get` returns the cached build while the stamp holds,
    and rebuilds at most once per `min_interval` seconds however fast the inputs change,
    or once per `spacing` times the last build's duration when that is longer (`current`
    waits that out). Without `version` every `min_interval` counts as a change (the old
    polling, for sources that cannot tell).
    """

    def __init__(
        self,
        build: Callable[[ViewKey], dict[str, Any] | None],
        *,
        version: Callable[[Iterable[ViewInput]], Hashable] | None,
        min_interval: float,
        spacing: float = 0.0,
        tick_seconds: float = DEFAULT_TICK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        limit: int = 256,
    ) -> None:
        self._build = build
        self._version = version
        self.min_interval = min_interval
        self.spacing = spacing
        self.tick_seconds = tick_seconds
        self._clock = clock
        self._limit = limit
        self._built: dict[ViewKey, tuple[float, BuiltView]] = {}
        """Key → (when the next build may start, the last build)."""
        self.builds = 0
        """How many times a view was built (for tests and the benchmark's reading)."""

    def stamp(self, key: ViewKey, now: float) -> Hashable:
        if self._version is None:
            return int(now // self.min_interval)
        tick = int(now // self.tick_seconds) if key[0] in TIMED_VIEWS else None
        return (self._version(VIEW_INPUTS[key[0]]), tick)

    def next_tick_in(self, key: ViewKey) -> float | None:
        """Seconds until a timed view's tick moves its stamp; None for the other views."""
        if key[0] not in TIMED_VIEWS:
            return None
        now = self._clock()
        return (math.floor(now / self.tick_seconds) + 1) * self.tick_seconds - now

    def held_for(self, key: ViewKey) -> float:
        """Seconds until the cached build may be replaced, when its inputs moved since it
        was built; 0 when it is current or may be rebuilt now."""
        cached = self._built.get(key)
        if cached is None:
            return 0.0
        now = self._clock()
        if now >= cached[0] or self.stamp(key, now) == cached[1].stamp:
            return 0.0
        return cached[0] - now

    async def current(self, key: ViewKey) -> BuiltView:
        """`get`, after waiting out a pause that holds back a build of changed inputs."""
        while (held := self.held_for(key)) > 0:
            await asyncio.sleep(held)
        return self.get(key)

    def get(self, key: ViewKey) -> BuiltView:
        now = self._clock()
        cached = self._built.get(key)
        if cached is not None and now < cached[0]:
            return cached[1]
        stamp = self.stamp(key, now)
        if cached is not None and cached[1].stamp == stamp:
            return cached[1]
        body = self._build(key)
        self.builds += 1
        built = BuiltView(stamp, body, b"event: view\ndata: " + orjson.dumps(body) + b"\n\n")
        took = self._clock() - now
        if len(self._built) >= self._limit and key not in self._built:
            self._built.clear()
        self._built[key] = (now + max(self.min_interval, self.spacing * took), built)
        return built
