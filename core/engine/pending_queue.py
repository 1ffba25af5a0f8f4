"""The pending workloads of one ClusterQueue: a heap of ready ones, a set of parked ones.

Order in the heap (upstream's queue order): the *sticky* workload first (under
BestEffortFIFO, the one that last issued preemptions stays at the head until admitted),
then higher priority, then earlier queue-order time, then UID.

Workloads that could not be admitted go to the *inadmissible* set under BestEffortFIFO
and wait there until something that may free capacity happens (`flush`). A workload that
failed while a flush happened after it was popped goes straight back to the heap, so no
wake-up is lost; `pop_cycle` / `flush_cycle` track that, as upstream does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from core.engine.model import QueueingStrategy
from core.engine.workload_state import Where, WorkloadState

# heap item: [priority key..., key, alive]
_HeapItem = list


def _order_key(ws: WorkloadState) -> tuple[int, float, str]:
    return (-ws.priority, ws.queue_time, ws.uid)


class PendingQueue:
    __slots__ = (
        "_heap",
        "_items",
        "flush_cycle",
        "inadmissible",
        "name",
        "pop_cycle",
        "sticky",
        "strategy",
    )

    def __init__(self, name: str, strategy: QueueingStrategy) -> None:
        self.name = name
        self.strategy = strategy
        self._heap: list[_HeapItem] = []
        self._items: dict[str, tuple[_HeapItem, WorkloadState]] = {}
        self.inadmissible: dict[str, WorkloadState] = {}
        self.sticky: str | None = None
        self.pop_cycle = 0
        self.flush_cycle = -1

    # ------------------------------------------------------------ membership
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def push(self, ws: WorkloadState) -> None:
        """Put ws in the heap (replacing any older entry for it)."""
        self.inadmissible.pop(ws.key, None)
        old = self._items.pop(ws.key, None)
        if old is not None:
            old[0][-1] = False
        item: _HeapItem = [*_order_key(ws), ws.key, True]
        heapq.heappush(self._heap, item)
        self._items[ws.key] = (item, ws)
        ws.where = Where.HEAP

    def park(self, ws: WorkloadState) -> None:
        """Put ws in the inadmissible set."""
        old = self._items.pop(ws.key, None)
        if old is not None:
            old[0][-1] = False
        self.inadmissible[ws.key] = ws
        ws.where = Where.INADMISSIBLE

    def remove(self, key: str) -> bool:
        found = False
        old = self._items.pop(key, None)
        if old is not None:
            old[0][-1] = False
            old[1].where = Where.NOWHERE
            found = True
        ws = self.inadmissible.pop(key, None)
        if ws is not None:
            ws.where = Where.NOWHERE
            found = True
        if self.sticky == key:
            self.sticky = None
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._items):
            self._compact()
        return found

    def _compact(self) -> None:
        self._heap = [item for item in self._heap if item[-1]]
        heapq.heapify(self._heap)

    # ------------------------------------------------------------ popping
    def pop(self) -> WorkloadState | None:
        self.pop_cycle += 1
        if self.sticky is not None and self.sticky in self._items:
            item, ws = self._items.pop(self.sticky)
            item[-1] = False
            ws.where = Where.NOWHERE
            return ws
        heap = self._heap
        while heap:
            item = heapq.heappop(heap)
            if item[-1]:
                _, ws = self._items.pop(item[-2])
                ws.where = Where.NOWHERE
                return ws
        return None

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
        if not self.inadmissible:
            return 0
        moved = 0
        for key in sorted(self.inadmissible):
            ws = self.inadmissible[key]
            if may_enter(ws):
                self.push(ws)
                moved += 1
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
