"""Our own writes to workers that the caches have not shown yet ("expectations").

A worker's cache learns of a copy the hub created (or deleted) a moment later, through
its watch. A pass that runs in between would otherwise create the copy again (a wasted
write answered AlreadyExists) or delete it again (answered NotFound): harmless, but each
one is an apiserver write, and writes are what DESIGN §5 counts. So every create and
delete is remembered until the cache agrees or `ttl_seconds` pass (a watch may miss an
object that came and went; the TTL keeps a memory from outliving its use), and cached
reads go through `view`, which shows the state as of our last write.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from core.kube.object_meta import uid_of

Json = Any
_Key = tuple[str, str, str]
"""(cluster, kind, namespace/name)."""


class PendingWrites:
    def __init__(self, ttl_seconds: float = 30.0, monotonic: Callable[[], float] = time.monotonic):
        self.ttl_seconds = ttl_seconds
        self._monotonic = monotonic
        self._created: dict[_Key, tuple[float, Json]] = {}
        self._deleted: dict[_Key, tuple[float, str]] = {}

    def __len__(self) -> int:
        return len(self._created) + len(self._deleted)

    def created(self, cluster: str, kind: str, key: str, obj: Json) -> None:
        self._created[(cluster, kind, key)] = (self._monotonic(), obj)
        self._deleted.pop((cluster, kind, key), None)

    def deleted(self, cluster: str, kind: str, key: str, uid: str) -> None:
        self._deleted[(cluster, kind, key)] = (self._monotonic(), uid)
        self._created.pop((cluster, kind, key), None)

    def view(self, cluster: str, kind: str, key: str, cached: Json | None) -> Json | None:
        """What is there as of our last write: `cached`, unless a write of ours is newer."""
        slot = (cluster, kind, key)
        now = self._monotonic()
        gone = self._deleted.get(slot)
        if gone is not None:
            fresh = now - gone[0] < self.ttl_seconds
            if cached is not None and uid_of(cached) == gone[1] and fresh:
                return None  # deleted by us; the cache has not seen it yet
            del self._deleted[slot]
        made = self._created.get(slot)
        if made is not None:
            if cached is not None or now - made[0] >= self.ttl_seconds:
                del self._created[slot]
            else:
                return made[1]  # created by us; the cache has not seen it yet
        return cached
