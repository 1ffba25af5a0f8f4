"""One nominee at a time, a bounded wait, and moving on through a confirmed withdrawal."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine.dispatch.fit_verdict import FitReason, FitVerdict, WorkerFit
from core.engine.dispatch.nomination import (
    NominationPhase,
    PlacementState,
    next_candidate,
)
from core.engine.dispatch.placement import PlacementDecision, PlacementMode, try_order

TIMEOUT = 60.0


def decision(**verdicts: FitVerdict) -> PlacementDecision:
    """Workers in keyword order (config order) with the given verdicts."""
    fits = tuple(
        WorkerFit(
            worker=name.replace("_", "-"),
            verdict=verdict,
            reason=None if verdict is FitVerdict.FITS else FitReason.INSUFFICIENT_UNUSED_QUOTA,
        )
        for name, verdict in verdicts.items()
    )
    any_fits = any(f.verdict is FitVerdict.FITS for f in fits)
    mode = PlacementMode.CAPACITY_AWARE if any_fits else PlacementMode.INCREMENTAL
    return PlacementDecision(fits=fits, mode=mode, order=try_order(fits))


FITS, NO, UNKNOWN = FitVerdict.FITS, FitVerdict.DOES_NOT_FIT, FitVerdict.UNKNOWN


def test_the_first_fitting_worker_is_nominated_alone() -> None:
    state = PlacementState().advance(decision(w1=NO, w2=FITS, w3=FITS), now=100.0, timeout=TIMEOUT)
    assert state.phase is NominationPhase.NOMINATED
    assert state.nominated_cluster_names == ("w2",)
    assert state.mode is PlacementMode.CAPACITY_AWARE
    assert state.deadline(TIMEOUT) == 160.0


def test_the_nominee_keeps_its_turn_until_the_timeout_even_if_another_looks_better() -> None:
    state = PlacementState().advance(decision(w1=NO, w2=FITS), now=0.0, timeout=TIMEOUT)
    later = state.advance(decision(w1=FITS, w2=NO), now=59.0, timeout=TIMEOUT)
    assert later == state


def test_after_the_timeout_it_withdraws_then_nominates_the_next_once_confirmed() -> None:
    d = decision(w1=FITS, w2=FITS)
    state = PlacementState().advance(d, now=0.0, timeout=TIMEOUT)
    assert state.nominated_cluster_names == ("w1",)
    withdrawing = state.advance(d, now=60.0, timeout=TIMEOUT)
    assert withdrawing.phase is NominationPhase.WITHDRAWING
    assert withdrawing.worker == "w1"
    assert withdrawing.nominated_cluster_names == ()
    # Nothing moves until the caller confirms the copy on w1 is gone.
    assert withdrawing.advance(d, now=500.0, timeout=TIMEOUT) == withdrawing
    assert withdrawing.withdrawn("w2", d, now=70.0) == withdrawing
    moved = withdrawing.withdrawn("w1", d, now=70.0, timeout=TIMEOUT)
    assert moved.nominated_cluster_names == ("w2",)
    assert moved.tried == ("w1",)
    assert moved.since == 70.0


def test_a_worker_being_withdrawn_that_admits_first_wins() -> None:
    d = decision(w1=FITS, w2=FITS)
    state = PlacementState().advance(d, now=0.0).advance(d, now=61.0, timeout=TIMEOUT)
    admitted = state.admitted("w1", now=62.0)
    assert admitted.phase is NominationPhase.ADMITTED
    assert admitted.worker == "w1"
    assert admitted.nominated_cluster_names == ()
    assert admitted.advance(d, now=1000.0) == admitted
    assert admitted.withdrawn("w1", d, now=1000.0) == admitted


def test_without_a_fitting_worker_it_falls_back_one_worker_at_a_time() -> None:
    d = decision(w1=NO, w2=UNKNOWN, w3=NO)
    state = PlacementState().advance(d, now=0.0, timeout=TIMEOUT)
    assert state.nominated_cluster_names == ("w2",)
    assert state.mode is PlacementMode.INCREMENTAL
    names = []
    for step in range(1, 5):
        state = state.advance(d, now=step * 100.0, timeout=TIMEOUT)
        state = state.withdrawn(state.worker or "", d, now=step * 100.0 + 1, timeout=TIMEOUT)
        names.append(state.nominated_cluster_names)
    # Unknown first, then config order; a new round puts the one just given up on last.
    assert names == [("w1",), ("w3",), ("w2",), ("w1",)]


def test_a_worker_that_fits_later_is_preferred_at_the_next_move() -> None:
    state = PlacementState().advance(decision(w1=NO, w2=NO, w3=NO), now=0.0, timeout=TIMEOUT)
    assert state.worker == "w1"
    now_fits = decision(w1=NO, w2=NO, w3=FITS)
    state = state.advance(now_fits, now=60.0, timeout=TIMEOUT)
    state = state.withdrawn("w1", now_fits, now=61.0, timeout=TIMEOUT)
    assert state.nominated_cluster_names == ("w3",)
    assert state.mode is PlacementMode.CAPACITY_AWARE


def test_a_guessed_nominee_gives_way_at_once_when_another_worker_fits() -> None:
    state = PlacementState().advance(decision(w1=NO, w2=NO), now=0.0, timeout=TIMEOUT)
    assert (state.worker, state.mode) == ("w1", PlacementMode.INCREMENTAL)
    assert state.advance(decision(w1=NO, w2=NO), now=10.0, timeout=TIMEOUT) == state
    w2_fits = decision(w1=NO, w2=FITS)
    withdrawing = state.advance(w2_fits, now=10.0, timeout=TIMEOUT)
    assert withdrawing.phase is NominationPhase.WITHDRAWING
    moved = withdrawing.withdrawn("w1", w2_fits, now=11.0, timeout=TIMEOUT)
    assert (moved.nominated_cluster_names, moved.mode) == (("w2",), PlacementMode.CAPACITY_AWARE)
    # A nominee that fitted when chosen keeps its turn (see the test above); so does a
    # guessed one that now fits itself.
    both = decision(w1=FITS, w2=FITS)
    assert state.advance(both, now=10.0, timeout=TIMEOUT) == state


def test_a_single_worker_stays_nominated_and_its_timer_restarts() -> None:
    d = decision(only=UNKNOWN)
    state = PlacementState().advance(d, now=0.0, timeout=TIMEOUT)
    again = state.advance(d, now=61.0, timeout=TIMEOUT)
    assert again.phase is NominationPhase.NOMINATED
    assert again.nominated_cluster_names == ("only",)
    assert again.since == 61.0


def test_a_nominee_removed_from_the_config_is_withdrawn_at_once() -> None:
    state = PlacementState().advance(decision(w1=FITS, w2=FITS), now=0.0, timeout=TIMEOUT)
    shrunk = decision(w2=FITS)
    withdrawing = state.advance(shrunk, now=1.0, timeout=TIMEOUT)
    assert withdrawing.phase is NominationPhase.WITHDRAWING
    assert withdrawing.withdrawn("w1", shrunk, now=2.0).nominated_cluster_names == ("w2",)


def test_next_candidate_reports_the_wait_and_the_round() -> None:
    d = decision(w1=FITS, w2=NO)
    keep = next_candidate(d, "w1", (), 20.0, TIMEOUT)
    assert (keep.worker, keep.moved, keep.wait) == ("w1", False, 40.0)
    move = next_candidate(d, "w1", (), 60.0, TIMEOUT)
    assert (move.worker, move.moved, move.tried, move.mode) == (
        "w2",
        True,
        ("w1",),
        PlacementMode.INCREMENTAL,
    )
    nobody = next_candidate(decision(), "w1", (), 0.0, TIMEOUT)
    assert (nobody.worker, nobody.moved) == (None, True)


def test_resume_after_a_restart_rebuilds_from_the_workload_status() -> None:
    assert PlacementState.resume((), None, now=5.0) == PlacementState()
    nominated = PlacementState.resume(("w2", "w3"), None, now=5.0)
    assert nominated.nominated_cluster_names == ("w2",)
    assert nominated.deadline(TIMEOUT) == 65.0
    assert PlacementState.resume((), "w1", now=5.0).phase is NominationPhase.ADMITTED


WORKERS = ("a", "b", "c")
verdicts = st.sampled_from([FITS, NO, UNKNOWN])
events = st.one_of(
    st.tuples(st.just("advance"), st.tuples(verdicts, verdicts, verdicts), st.floats(0, 200)),
    st.tuples(st.just("gc"), st.sampled_from(WORKERS), st.just(0.0)),
    st.tuples(st.just("withdrawn"), st.sampled_from(WORKERS), st.floats(0, 5)),
    st.tuples(st.just("admitted"), st.sampled_from(WORKERS), st.just(0.0)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=60))
def test_at_most_one_worker_ever_holds_a_copy(script: list[tuple[str, object, float]]) -> None:
    """Copies appear when a worker is nominated and go only once it is not (gc); the
    caller confirms `withdrawn` only for copies that are gone. Never two at once."""
    state = PlacementState()
    copies: set[str] = set()
    last = decision(a=UNKNOWN, b=UNKNOWN, c=UNKNOWN)
    now = 0.0
    for kind, arg, dt in script:
        now += dt
        if kind == "advance":
            assert isinstance(arg, tuple)
            last = decision(**dict(zip(WORKERS, arg, strict=True)))
            state = state.advance(last, now=now, timeout=TIMEOUT)
        elif kind == "gc":
            if arg not in state.nominated_cluster_names:
                copies.discard(str(arg))
        elif kind == "withdrawn":
            if arg not in copies:
                state = state.withdrawn(str(arg), last, now=now, timeout=TIMEOUT)
        elif state.phase is not NominationPhase.IDLE and arg in copies:
            state = state.admitted(str(arg), now=now)
        nominated = state.nominated_cluster_names
        assert len(nominated) <= 1
        copies.update(nominated)
        assert len(copies) <= 1, (copies, state)
