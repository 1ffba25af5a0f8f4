"""Pending notes (QuotaReserved=False reasons) wait for spare write budget; decisions don't."""

from __future__ import annotations

from typing import Any

from core.manager.workload_status_patch import is_pending_note
from core.manager.workload_status_sync import PENDING_REFRESH_SECONDS, PendingNotes


def cond(type_: str, status: str, reason: str, message: str = "m") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_a_first_or_reworded_pending_condition_is_a_note() -> None:
    pending = cond("QuotaReserved", "False", "Pending", "3 more needed")
    assert is_pending_note({}, {"conditions": [pending]})
    before = {"conditions": [cond("QuotaReserved", "False", "Pending", "5 more needed")]}
    assert is_pending_note(before, {"conditions": [pending]})
    inadmissible = cond("QuotaReserved", "False", "Inadmissible", "no LocalQueue")
    assert is_pending_note(before, {"conditions": [inadmissible]})


def test_anything_that_moves_quota_or_touches_more_is_a_decision() -> None:
    reserved = {"conditions": [cond("QuotaReserved", "True", "QuotaReserved")]}
    released = {"conditions": [cond("QuotaReserved", "False", "Pending")]}
    # Releasing a reservation is a decision, even in the same words.
    assert not is_pending_note(reserved, released)
    # A reservation, or an admission field alongside, is a decision.
    assert not is_pending_note(released, reserved)
    assert not is_pending_note({}, {**released, "admission": None})
    # Another condition changing with it (Requeued after an eviction) is a decision.
    both = {"conditions": [*released["conditions"], cond("Requeued", "True", "Preempted")]}
    assert not is_pending_note({}, both)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_notes_are_released_oldest_first_within_the_limit() -> None:
    notes = PendingNotes(Clock())
    for key in ("ns/a", "ns/b", "ns/c"):
        notes.hold(key, rewording=False)
    notes.hold("ns/a", rewording=False)  # held once
    assert len(notes) == 3
    assert notes.release(0) == []
    assert notes.release(2) == ["ns/a", "ns/b"]
    assert notes.released == {"ns/a", "ns/b"}
    assert notes.release(5) == ["ns/c"]
    assert len(notes) == 0


def test_a_rewording_waits_for_the_refresh_interval_and_a_decision_cancels_it() -> None:
    clock = Clock()
    notes = PendingNotes(clock)
    notes.written("ns/a")
    notes.hold("ns/a", rewording=True)
    assert notes.release(10) == []
    clock.now += PENDING_REFRESH_SECONDS
    assert notes.release(10) == ["ns/a"]
    notes.hold("ns/b", rewording=False)
    notes.drop("ns/b")  # admitted meanwhile: the note is owed no more
    assert notes.release(10) == []
