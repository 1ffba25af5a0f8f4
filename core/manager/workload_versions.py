"""The newest known version of every Workload, whichever path it arrived by.

Workloads reach the hub three ways: informer events (in order), responses to the hub's own
writes, and fresh reads (after a lost write race, or when becoming leader). The engine
must see each version at most once and never step back to an older one, and every write
must carry the resourceVersion of the newest version the engine has taken in: that is
what makes a decision taken on a stale view fail with a Conflict instead of landing.

`admit` is the gate: it says whether a version is newer than the newest one seen for its
key, and records it. `remember` (a write's response) and `take` (a fresh read) keep an
out-of-band version until the informer's copy catches up, so `current` always answers
with the newest object. Deleted keys are
forgotten, and a late out-of-band version of a forgotten key is never resurrected.
"""

from __future__ import annotations

from collections.abc import Callable

from core.api.json_types import Json
from core.kube.object_meta import object_key, resource_version_of
from core.manager.resource_versions import is_newer


class WorkloadVersions:
    """Newest version per Workload key (`namespace/name`); see the module docstring."""

    __slots__ = ("_cached", "_known", "_newer")

    def __init__(self, cached: Callable[[str], Json | None]) -> None:
        self._cached = cached
        # resourceVersion of the newest version admitted, per key (only keys that exist).
        self._known: dict[str, str] = {}
        # Versions newer than the informer's copy (write responses, fresh reads).
        self._newer: dict[str, Json] = {}

    def admit(self, obj: Json) -> bool:
        """Record `obj`'s version; False when a version at least as new was seen already."""
        key = object_key(obj)
        version = resource_version_of(obj)
        known = self._known.get(key)
        if known is not None and not is_newer(version, known):
            return False
        self._known[key] = version
        return True

    def remember(self, obj: Json) -> bool:
        """Admit an out-of-band version and serve it from `current` until the cache has it.

        Returns whether it was newer. A key that is not tracked (deleted, or not yet seen
        by the informer) is left alone.
        """
        key = object_key(obj)
        if key not in self._known or not self.admit(obj):
            return False
        self._newer[key] = obj
        return True

    def take(self, obj: Json) -> bool:
        """Admit a version just read from the apiserver (it exists there right now)."""
        if not self.admit(obj):
            return False
        self._newer[object_key(obj)] = obj
        return True

    def out_of_band(self, key: str) -> Json | None:
        """The version kept from a write or a read, if the informer has not caught up."""
        return self._newer.get(key)

    def current(self, key: str) -> Json | None:
        """The newest version of the Workload, or None when it is unknown or deleted."""
        cached = self._cached(key)
        newer = self._newer.get(key)
        if newer is None:
            return cached
        if cached is not None and not is_newer(
            resource_version_of(newer), resource_version_of(cached)
        ):
            del self._newer[key]
            return cached
        return newer

    def known_version(self, key: str) -> str | None:
        return self._known.get(key)

    def forget(self, key: str) -> None:
        """The Workload is gone: drop everything recorded for it."""
        self._known.pop(key, None)
        self._newer.pop(key, None)
