"""Upstream's dispatchers: who gets a copy of a workload waiting for a worker.

A dispatcher answers one question for a workload whose MultiKueue check is Pending: which
workers are nominated now (`Nomination.names`), and when to ask again. The reconciler
writes the answer to `status.nominatedClusterNames` (unless the dispatcher is External,
whose nominations someone else writes) and creates or removes copies to match.

- AllAtOnce: every connected worker of the config; the first to admit wins.
- Incremental: every round adds the next `step_size` workers in config order, whatever
  their connection state (as upstream); rounds last `round_seconds`. The round's start
  lives in memory; after a restart a workload that already has nominations starts a new
  round without adding anyone, so a restart never shortens a round.
- External: whatever another controller wrote.
The capacity-aware dispatcher lives in `capacity_dispatcher`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from hub.multikueue.dispatch.workload_facts import Json


@dataclass(frozen=True, slots=True)
class WorkerChoice:
    """One worker of the config as a dispatcher sees it."""

    name: str
    connected: bool
    has_copy: bool
    """Our copy of the workload is on it (unknown, so False, while disconnected)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchRequest:
    key: str
    local: Json
    workers: tuple[WorkerChoice, ...]
    """Config order."""
    nominated: tuple[str, ...]
    """What `status.nominatedClusterNames` holds now."""
    now: float
    """Seconds since the epoch."""


@dataclass(frozen=True, slots=True)
class Nomination:
    names: tuple[str, ...]
    write: bool = True
    """False: the names are someone else's to write (External)."""
    recheck_after: float | None = None


class Dispatcher(Protocol):
    name: str

    async def nominate(self, request: DispatchRequest) -> Nomination: ...

    def forget(self, key: str) -> None:
        """The workload is placed, finished or gone: drop what is kept for it."""

    def capacity_sensitive(self) -> Collection[str]:
        """Nominated workloads whose nomination a new capacity report may change."""


def _in_config(names: Sequence[str], workers: Sequence[WorkerChoice]) -> tuple[str, ...]:
    known = {w.name for w in workers}
    return tuple(n for n in names if n in known)


class AllAtOnceDispatcher:
    name = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"

    async def nominate(self, request: DispatchRequest) -> Nomination:
        return Nomination(tuple(w.name for w in request.workers if w.connected))

    def forget(self, key: str) -> None:
        return None

    def capacity_sensitive(self) -> Collection[str]:
        return ()


class IncrementalDispatcher:
    name = "kueue.x-k8s.io/multikueue-dispatcher-incremental"

    def __init__(self, step_size: int = 3, round_seconds: float = 300.0) -> None:
        if step_size < 1:
            raise ValueError("the incremental step size must be at least 1")
        self.step_size = step_size
        self.round_seconds = round_seconds
        self._round_started: dict[str, float] = {}

    async def nominate(self, request: DispatchRequest) -> Nomination:
        nominated = _in_config(request.nominated, request.workers)
        started = self._round_started.get(request.key)
        if started is None and nominated:
            started = self._round_started[request.key] = request.now  # resumed after a restart
        if started is not None and request.now - started < self.round_seconds:
            return Nomination(nominated, recheck_after=started + self.round_seconds - request.now)
        remaining = [w.name for w in request.workers if w.name not in nominated]
        if not remaining:
            return Nomination(nominated)
        self._round_started[request.key] = request.now
        return Nomination(
            nominated + tuple(remaining[: self.step_size]), recheck_after=self.round_seconds
        )

    def forget(self, key: str) -> None:
        self._round_started.pop(key, None)

    def capacity_sensitive(self) -> Collection[str]:
        return ()


class ExternalDispatcher:
    """Nominations written by another controller; this one only follows them."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def nominate(self, request: DispatchRequest) -> Nomination:
        return Nomination(_in_config(request.nominated, request.workers), write=False)

    def forget(self, key: str) -> None:
        return None

    def capacity_sensitive(self) -> Collection[str]:
        return ()
