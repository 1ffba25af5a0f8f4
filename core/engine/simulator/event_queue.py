"""The simulator's agenda: timed events popped in a fully determined order.

Events at the same virtual instant are ordered by kind (the order of ``EventKind``: the
world changes first, the scheduler looks last, as a real scheduler sees everything that
happened before it takes its snapshot), then by the order they were pushed. No two runs of
the same scenario can therefore order anything differently.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import IntEnum


class EventKind(IntEnum):
    """What happens; the value is the tie-break between events at the same instant."""

    CREATED = 0
    """The manager sees a new workload."""
    FINISHED = 1
    """The manager sees a workload the runner marked Finished; its quota is released."""
    EVICTION_DONE = 2
    """The manager sees the runner cleared an evicted workload's reservation."""
    ADMITTED_SEEN = 3
    """The runner sees a workload Admitted and starts its runtime."""
    TIMER = 4
    """An engine timer (backoff, requeue batch, ...) is due."""
    CYCLE = 5
    """The scheduling thread starts a cycle."""


@dataclass(frozen=True, slots=True)
class Event:
    at: float
    kind: EventKind
    key: str = ""
    """Workload key the event is about; empty for TIMER and CYCLE."""
    epoch: int = 0
    """Admission epoch of the workload; events of an older epoch are stale."""


class EventQueue:
    """A min-heap of events ordered by (time, kind, push order)."""

    __slots__ = ("_heap", "_pushed")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Event]] = []
        self._pushed = 0

    def push(self, event: Event) -> None:
        self._pushed += 1
        heapq.heappush(self._heap, (event.at, event.kind, self._pushed, event))

    def pop(self) -> Event:
        return heapq.heappop(self._heap)[3]

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)
