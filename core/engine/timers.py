"""Deadlines the engine must act on: requeue backoff, PodsReady timeouts, execution limits.

A timer is only a hint: when it fires, the engine re-checks the workload's state, so
timers never need cancelling; stale ones are dropped when they reach the top.
"""

from __future__ import annotations

import heapq
from enum import IntEnum


class TimerKind(IntEnum):
    BACKOFF = 0
    PODS_READY = 1
    MAX_EXECUTION = 2


class Timers:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, TimerKind]] = []
        self._seq = 0

    def add(self, when: float, key: str, kind: TimerKind) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, key, kind))

    def due(self, now: float) -> list[tuple[float, str, TimerKind]]:
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            when, _, key, kind = heapq.heappop(heap)
            out.append((when, key, kind))
        return out

    def peek(self) -> tuple[float, str, TimerKind] | None:
        if not self._heap:
            return None
        when, _, key, kind = self._heap[0]
        return when, key, kind

    def drop_top(self) -> None:
        heapq.heappop(self._heap)

    def __len__(self) -> int:
        return len(self._heap)
