"""Which ClusterQueues a scheduling cycle or a flush has to visit at all.

With a thousand ClusterQueues most hold nothing to try at any moment, yet a cycle used to
sort and test every one of them and each finished workload flushed every queue of its
cohort tree. The pending queues report here when they gain or lose heads and when a flush
would change them, so both walks touch only queues with work. Names are kept sorted so
the cycle still takes heads in ClusterQueue-name order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable


class QueueIndex:
    """Sorted names of queues with heads; per flush group, names of queues a flush changes.

    A flush group is the set of ClusterQueues one flush reaches (a cohort tree, or a lone
    ClusterQueue); `group_of` names it. Groups move when cohorts change, so after
    `tree_changed` they are recomputed, lazily, for the few queues that want a flush.
    """

    __slots__ = ("_group_of", "_groups", "_ready", "_stale", "_wanting")

    def __init__(self, group_of: Callable[[str], Hashable]) -> None:
        self._group_of = group_of
        self._ready: list[str] = []
        # name -> the group it was filed under (None while groups are stale)
        self._wanting: dict[str, Hashable] = {}
        self._groups: dict[Hashable, set[str]] = {}
        self._stale = False

    # ------------------------------------------------------------ reports from queues
    def heads_changed(self, name: str, has_heads: bool) -> None:
        ready = self._ready
        at = bisect_left(ready, name)
        present = at < len(ready) and ready[at] == name
        if has_heads and not present:
            ready.insert(at, name)
        elif not has_heads and present:
            del ready[at]

    def flush_wanted_changed(self, name: str, wanted: bool) -> None:
        if wanted:
            if name in self._wanting:
                return
            group = None if self._stale else self._group_of(name)
            self._wanting[name] = group
            if not self._stale:
                self._groups.setdefault(group, set()).add(name)
        elif name in self._wanting:
            group = self._wanting.pop(name)
            if not self._stale:
                members = self._groups[group]
                members.discard(name)
                if not members:
                    del self._groups[group]

    def forget(self, name: str) -> None:
        """The ClusterQueue is gone; its old queue no longer counts."""
        self.heads_changed(name, False)
        self.flush_wanted_changed(name, False)

    def tree_changed(self) -> None:
        """Cohorts moved: flush groups are recomputed before they are next read."""
        self._stale = True
        self._groups = {}

    # ------------------------------------------------------------ queries
    def with_heads(self) -> list[str]:
        """Names of queues with heads, sorted (a copy: popping heads changes the index)."""
        return list(self._ready)

    def wanting_flush(self, group: Hashable) -> list[str]:
        """Sorted names of the queues in `group` that a flush would change."""
        if self._stale:
            self._regroup()
        members = self._groups.get(group)
        return sorted(members) if members else []

    def all_wanting_flush(self) -> list[str]:
        return sorted(self._wanting)

    def _regroup(self) -> None:
        groups: dict[Hashable, set[str]] = {}
        for name in self._wanting:
            group = self._group_of(name)
            self._wanting[name] = group
            groups.setdefault(group, set()).add(name)
        self._groups = groups
        self._stale = False
