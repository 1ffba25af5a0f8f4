"""One nominee at a time: wait a bounded time for it to admit, then move on.

The capacity-aware dispatcher writes `status.nominatedClusterNames` from
`PlacementState.nominated_cluster_names`, which never holds more than one worker. Moving
on goes through WITHDRAWING: the nomination is cleared (so the MultiKueue controller
removes the remote copy) and the next worker is nominated only once the caller confirms
with `withdrawn` that the old copy is gone. So at no moment do two workers hold a copy
this dispatcher asked for, and a workload can trigger preemption on one worker only
(upstream's AllAtOnce may preempt on every worker at once). Should the old worker admit
before its copy is gone, it simply wins (`admitted`).

Everything here is pure: `now`, `elapsed` and `timeout` are seconds on the caller's clock.
After a hub restart, `PlacementState.resume` rebuilds the state from the Workload's
status, restarting the nominee's timer (the safe side: never cut a nominee short).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from core.engine.dispatch.fit_verdict import FitVerdict
from core.engine.dispatch.placement import PlacementDecision, PlacementMode

DEFAULT_NOMINATION_TIMEOUT_SECONDS = 60.0
GUESS_RECHECK_SECONDS = 2.0
"""How often a nomination made on a guess is judged again as reports come in: reports
arrive from every worker every second or so, and judging is O(workers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NextCandidate:
    """Who should be nominated now.

    `worker` None: nobody (the config has no workers). `moved`: the previous choice must
    be withdrawn first. `tried`: workers that had their turn in this round. `wait`: seconds
    until the nominee's time is up.
    """

    worker: str | None
    mode: PlacementMode | None
    tried: tuple[str, ...]
    moved: bool
    wait: float | None


def _mode(decision: PlacementDecision, worker: str) -> PlacementMode:
    fit = decision.verdict(worker)
    if fit is not None and fit.verdict is FitVerdict.FITS:
        return PlacementMode.CAPACITY_AWARE
    return PlacementMode.INCREMENTAL


def _first_untried(decision: PlacementDecision, tried: Sequence[str]) -> str | None:
    for worker in decision.order:
        if worker not in tried:
            return worker
    return None


def _fits_elsewhere(decision: PlacementDecision, nominee: str) -> bool:
    """A report now says some other worker fits while the nominee does not."""
    if decision.mode is not PlacementMode.CAPACITY_AWARE or decision.chosen == nominee:
        return False
    return _mode(decision, nominee) is not PlacementMode.CAPACITY_AWARE


def next_candidate(
    decision: PlacementDecision,
    previous_choice: str | None,
    tried: Sequence[str],
    elapsed: float,
    timeout: float,
    *,
    guessed: bool = False,
) -> NextCandidate:
    """Keep the nominee while its time runs, else the next worker in the decision's order.

    The previous choice keeps its turn for `timeout` seconds after its nomination
    (`elapsed`), even if another worker now looks better: switching early could start
    preemptions in two places. Two exceptions: it loses its turn at once if it left the
    config, and a nominee that was only a guess (`guessed`: nominated in INCREMENTAL mode,
    when no report said any worker fits) loses it as soon as a report says another worker
    fits while it still does not: a job should not sit out a whole timeout on a worker
    that had no room, while one that has room is in sight. Once every worker has had a
    turn a new round starts, with the worker just given up on last; a config of one worker
    keeps it nominated.
    """
    workers = {fit.worker for fit in decision.fits}
    if previous_choice is not None and guessed and _fits_elsewhere(decision, previous_choice):
        elapsed = timeout
    if previous_choice is not None and previous_choice in workers and elapsed < timeout:
        return NextCandidate(
            worker=previous_choice,
            mode=_mode(decision, previous_choice),
            tried=tuple(tried),
            moved=False,
            wait=timeout - elapsed,
        )
    done = [w for w in tried if w in workers]
    if previous_choice in workers and previous_choice not in done:
        done.append(previous_choice)
    pick = _first_untried(decision, done)
    if pick is None:
        done = [previous_choice] if previous_choice in workers else []
        pick = _first_untried(decision, done)
        if pick is None and previous_choice in workers:
            pick, done = previous_choice, []
    if pick is None:
        return NextCandidate(
            worker=None, mode=None, tried=(), moved=previous_choice is not None, wait=None
        )
    return NextCandidate(
        worker=pick,
        mode=_mode(decision, pick),
        tried=tuple(done),
        moved=pick != previous_choice,
        wait=timeout,
    )


class NominationPhase(StrEnum):
    IDLE = "Idle"
    """Nobody nominated."""
    NOMINATED = "Nominated"
    """One worker nominated; waiting for it to admit the workload."""
    WITHDRAWING = "Withdrawing"
    """Its time is up: nomination cleared, waiting until its remote copy is gone."""
    ADMITTED = "Admitted"
    """A worker admitted the workload (status.clusterName); this dispatch is over."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementState:
    """Where one workload's capacity-aware dispatch stands; every transition is pure."""

    phase: NominationPhase = NominationPhase.IDLE
    # The nominee (NOMINATED), the worker being withdrawn, or the admitting worker.
    worker: str | None = None
    mode: PlacementMode | None = None
    # When the current phase began.
    since: float | None = None
    tried: tuple[str, ...] = ()

    @property
    def nominated_cluster_names(self) -> tuple[str, ...]:
        """What status.nominatedClusterNames should hold: at most one worker, ever."""
        if self.phase is NominationPhase.NOMINATED and self.worker is not None:
            return (self.worker,)
        return ()

    def deadline(self, timeout: float) -> float | None:
        """When the nominee's time is up (to requeue the workload then), if nominated."""
        if self.phase is NominationPhase.NOMINATED and self.since is not None:
            return self.since + timeout
        return None

    @classmethod
    def resume(
        cls, nominated: Sequence[str], cluster_name: str | None, now: float
    ) -> PlacementState:
        """Rebuild from a Workload's status after a restart (the timer starts over).

        With several names nominated (written by another dispatcher), the first one is
        kept: writing this state back narrows the nomination to it.
        """
        if cluster_name:
            return cls(phase=NominationPhase.ADMITTED, worker=cluster_name, since=now)
        if nominated:
            return cls(phase=NominationPhase.NOMINATED, worker=nominated[0], since=now)
        return cls()

    def advance(
        self,
        decision: PlacementDecision,
        *,
        now: float,
        timeout: float = DEFAULT_NOMINATION_TIMEOUT_SECONDS,
    ) -> PlacementState:
        """Nominate, keep waiting, or start withdrawing, given a fresh decision."""
        if self.phase is NominationPhase.IDLE:
            step = next_candidate(decision, None, self.tried, 0.0, timeout)
            if step.worker is None:
                return self
            return PlacementState(
                phase=NominationPhase.NOMINATED,
                worker=step.worker,
                mode=step.mode,
                since=now,
                tried=step.tried,
            )
        if self.phase is not NominationPhase.NOMINATED:
            return self
        since = now if self.since is None else self.since
        step = next_candidate(
            decision,
            self.worker,
            self.tried,
            now - since,
            timeout,
            guessed=self.mode is PlacementMode.INCREMENTAL,
        )
        if step.moved:
            return PlacementState(
                phase=NominationPhase.WITHDRAWING,
                worker=self.worker,
                mode=self.mode,
                since=now,
                tried=step.tried,
            )
        if now - since >= timeout:
            # A new round gave the same (only) worker another turn: restart its timer.
            return replace(self, mode=step.mode, since=now, tried=step.tried)
        return self

    def withdrawn(
        self,
        worker: str,
        decision: PlacementDecision,
        *,
        now: float,
        timeout: float = DEFAULT_NOMINATION_TIMEOUT_SECONDS,
    ) -> PlacementState:
        """The remote copy on `worker` is gone: nominate the next worker, if any."""
        if self.phase is not NominationPhase.WITHDRAWING or worker != self.worker:
            return self
        idle = PlacementState(tried=self.tried)
        return idle.advance(decision, now=now, timeout=timeout)

    def admitted(self, worker: str, *, now: float) -> PlacementState:
        """`worker` admitted the workload: the first admission wins, even one being withdrawn."""
        if self.phase is NominationPhase.ADMITTED:
            return self
        return PlacementState(
            phase=NominationPhase.ADMITTED, worker=worker, mode=self.mode, since=now
        )
