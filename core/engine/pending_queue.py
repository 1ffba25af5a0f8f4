"""The pending workloads of one ClusterQueue: a heap of ready ones, a set of parked ones.

Order in the heap (upstream's queue order): the *sticky* workload first (under
BestEffortFIFO, the one that last issued preemptions stays at the head until admitted),
then higher priority, then earlier queue-order time, then UID.

Workloads that could not be admitted go to the *inadmissible* set under BestEffortFIFO
and wait there until something that may free capacity happens (`flush`). A workload that
failed while a flush happened after it was popped goes straight back to the heap, so no
wake-up is lost; `pop_cycle` / `flush_cycle` track that, as upstream does.

A `QueueWatcher` hears when the queue gains or loses heads and when a flush would change
it (parked workloads, or a pop since the last flush), so callers can skip idle queues.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Protocol

from core.engine.model import QueueingStrategy
from core.engine.workload_state import Where, WorkloadState

# heap item: [priority key..., key, alive]
_HeapItem = list


def _order_key(ws: WorkloadState) -> tuple[int, float, str]:
    return (-ws.priority, ws.queue_time, ws.uid)


class QueueWatcher(Protocol):
    def heads_changed(self, name: str, has_heads: bool) -> None: ...

    def flush_wanted_changed(self, name: str, wanted: bool) -> None: ...


class PendingQueue:
    __slots__ = (
        "_has_heads",
        "_heap",
        "_heap_per_lq",
        "_items",
        "_lq_of",
        "_parked_per_lq",
        "_wants_flush",
        "flush_cycle",
        "inadmissible",
        "name",
        "pop_cycle",
        "sticky",
        "strategy",
        "watcher",
    )

    def __init__(
        self, name: str, strategy: QueueingStrategy, watcher: QueueWatcher | None = None
    ) -> None:
        self.name = name
        self.strategy = strategy
        self._heap: list[_HeapItem] = []
        self._items: dict[str, tuple[_HeapItem, WorkloadState]] = {}
        self.inadmissible: dict[str, WorkloadState] = {}
        # Members per LocalQueue, kept as they come and go, so a queue's status never
        # scans the whole ClusterQueue: key -> the LocalQueue it was counted under.
        self._lq_of: dict[str, str] = {}
        self._heap_per_lq: dict[str, int] = {}
        self._parked_per_lq: dict[str, int] = {}
        self.sticky: str | None = None
        # A flush after the latest pop sets flush_cycle to pop_cycle (never above it).
        self.pop_cycle = 0
        self.flush_cycle = 0
        self.watcher = watcher
        self._has_heads = False
        self._wants_flush = False

    def _report(self) -> None:
        """Tell the watcher about a change in having heads or in needing a flush."""
        watcher = self.watcher
        if watcher is None:
            return
        has_heads = bool(self._items)
        if has_heads != self._has_heads:
            self._has_heads = has_heads
            watcher.heads_changed(self.name, has_heads)
        # Flushing changes nothing unless workloads are parked or one was popped since.
        wants_flush = bool(self.inadmissible) or self.flush_cycle < self.pop_cycle
        if wants_flush != self._wants_flush:
            self._wants_flush = wants_flush
            watcher.flush_wanted_changed(self.name, wants_flush)

    # ------------------------------------------------------------ membership
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def _count(self, key: str, lq_key: str, parked: bool) -> None:
        self._lq_of[key] = lq_key
        counts = self._parked_per_lq if parked else self._heap_per_lq
        counts[lq_key] = counts.get(lq_key, 0) + 1

    def _uncount(self, key: str, parked: bool) -> None:
        lq_key = self._lq_of.pop(key, None)
        if lq_key is None:
            return
        counts = self._parked_per_lq if parked else self._heap_per_lq
        left = counts.get(lq_key, 0) - 1
        if left > 0:
            counts[lq_key] = left
        else:
            counts.pop(lq_key, None)

    def push(self, ws: WorkloadState) -> None:
        """Put ws in the heap (replacing any older entry for it)."""
        if self.inadmissible.pop(ws.key, None) is not None:
            self._uncount(ws.key, parked=True)
        old = self._items.pop(ws.key, None)
        if old is not None:
            old[0][-1] = False
            self._uncount(ws.key, parked=False)
        item: _HeapItem = [*_order_key(ws), ws.key, True]
        heapq.heappush(self._heap, item)
        self._items[ws.key] = (item, ws)
        self._count(ws.key, ws.lq_key, parked=False)
        ws.where = Where.HEAP
        self._report()

    def park(self, ws: WorkloadState) -> None:
        """Put ws in the inadmissible set."""
        old = self._items.pop(ws.key, None)
        if old is not None:
            old[0][-1] = False
            self._uncount(ws.key, parked=False)
        if self.inadmissible.pop(ws.key, None) is not None:
            self._uncount(ws.key, parked=True)
        self.inadmissible[ws.key] = ws
        self._count(ws.key, ws.lq_key, parked=True)
        ws.where = Where.INADMISSIBLE
        self._report()

    def remove(self, key: str) -> bool:
        found = False
        old = self._items.pop(key, None)
        if old is not None:
            old[0][-1] = False
            old[1].where = Where.NOWHERE
            self._uncount(key, parked=False)
            found = True
        ws = self.inadmissible.pop(key, None)
        if ws is not None:
            ws.where = Where.NOWHERE
            self._uncount(key, parked=True)
            found = True
        if self.sticky == key:
            self.sticky = None
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._items):
            self._compact()
        self._report()
        return found

    def _compact(self) -> None:
        self._heap = [item for item in self._heap if item[-1]]
        heapq.heapify(self._heap)

    # ------------------------------------------------------------ popping
    def pop(self) -> WorkloadState | None:
        self.pop_cycle += 1
        ws = self._take_head()
        self._report()
        return ws

    def _take_head(self) -> WorkloadState | None:
        if self.sticky is not None and self.sticky in self._items:
            item, ws = self._items.pop(self.sticky)
            item[-1] = False
            ws.where = Where.NOWHERE
            self._uncount(ws.key, parked=False)
            return ws
        heap = self._heap
        while heap:
            item = heapq.heappop(heap)
            if item[-1]:
                _, ws = self._items.pop(item[-2])
                ws.where = Where.NOWHERE
                self._uncount(ws.key, parked=False)
                return ws
        return None

    def peek_key(self) -> str | None:
        """The key `pop` would return next, without taking it."""
        if self.sticky is not None and self.sticky in self._items:
            return self.sticky
        heap = self._heap
        while heap and not heap[0][-1]:
            heapq.heappop(heap)  # a dead entry: popping it changes nothing `pop` would see
        return heap[0][-2] if heap else None

    def peek_nonempty(self) -> bool:
        return bool(self._items)

    # ------------------------------------------------------------ requeue rules
    def requeue(
        self,
        ws: WorkloadState,
        *,
        immediate: bool,
        pending_preemption: bool,
        backoff_expired: bool,
    ) -> None:
        """Return a workload that was tried and not admitted."""
        if pending_preemption and self.strategy == QueueingStrategy.BEST_EFFORT_FIFO:
            self.sticky = ws.key
        if ws.key in self._items or ws.key in self.inadmissible:
            return
        pending_flavors = ws.last_assignment is not None and ws.last_assignment.pending_flavors()
        if backoff_expired and (immediate or self.flush_cycle >= self.pop_cycle or pending_flavors):
            self.push(ws)
        else:
            self.park(ws)

    def flush(self, may_enter: Callable[[WorkloadState], bool]) -> int:
        """Move parked workloads back to the heap; `may_enter` keeps the unready ones parked."""
        self.flush_cycle = self.pop_cycle
        moved = 0
        for key in sorted(self.inadmissible):
            ws = self.inadmissible[key]
            if may_enter(ws):
                self.push(ws)
                moved += 1
        self._report()
        return moved

    # ------------------------------------------------------------ views
    def heap_workloads(self) -> Iterator[WorkloadState]:
        for _, ws in self._items.values():
            yield ws

    def ordered(self) -> list[WorkloadState]:
        """All pending workloads (heap and inadmissible) in queue order (visibility API)."""
        everything = [ws for _, ws in self._items.values()]
        everything.extend(self.inadmissible.values())
        sticky = self.sticky

        def key(ws: WorkloadState) -> tuple[bool, int, float, str]:
            return (ws.key != sticky, -ws.priority, ws.queue_time, ws.uid)

        everything.sort(key=key)
        return everything

    def total(self) -> int:
        return len(self._items) + len(self.inadmissible)

    def count_of(self, lq_key: str) -> tuple[int, int]:
        """(in the heap, inadmissible) of the members counted under LocalQueue `lq_key`."""
        return self._heap_per_lq.get(lq_key, 0), self._parked_per_lq.get(lq_key, 0)
