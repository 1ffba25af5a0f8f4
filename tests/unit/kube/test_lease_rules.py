"""Who may take a Lease: judged by how long we watched it unchanged, not by remote clocks."""

from __future__ import annotations

from core.api.kube_time import parse_time
from core.kube.lease import LeaseSpec, held_by_other, next_spec, observe, released_spec
from core.kube.micro_time import format_micro_time


def spec(holder: str, renew: str = "t1", transitions: int = 0, duration: int = 15) -> LeaseSpec:
    return LeaseSpec(
        holder_identity=holder,
        lease_duration_seconds=duration,
        acquire_time="t0",
        renew_time=renew,
        lease_transitions=transitions,
    )


def test_a_lease_renewed_by_another_is_held_until_it_goes_unchanged_for_its_duration() -> None:
    seen = observe(None, spec("a", "t1"), now=100.0)
    assert held_by_other(seen, "b", now=114.9)
    # a renewal restarts the clock...
    seen = observe(seen, spec("a", "t2"), now=110.0)
    assert held_by_other(seen, "b", now=124.0)
    # ...an unchanged record does not.
    seen = observe(seen, spec("a", "t2"), now=120.0)
    assert seen.observed_at == 110.0
    assert not held_by_other(seen, "b", now=125.0)


def test_our_own_or_a_released_lease_is_never_held_by_another() -> None:
    assert not held_by_other(observe(None, spec("b"), 0.0), "b", now=1.0)
    assert not held_by_other(observe(None, spec(""), 0.0), "b", now=1.0)


def test_renewing_keeps_acquire_time_and_transitions_taking_over_counts_one() -> None:
    renewed = next_spec(spec("a", transitions=3), "a", 15, "t9")
    assert (renewed.acquire_time, renewed.renew_time, renewed.lease_transitions) == ("t0", "t9", 3)

    taken = next_spec(spec("a", transitions=3), "b", 15, "t9")
    assert (taken.holder_identity, taken.acquire_time, taken.lease_transitions) == ("b", "t9", 4)


def test_releasing_clears_the_holder_and_keeps_the_transition_count() -> None:
    released = released_spec(spec("a", transitions=2), "t5")
    assert released.holder_identity == ""
    assert released.lease_duration_seconds == 1
    assert released.lease_transitions == 2


def test_micro_time_always_has_six_fractional_digits() -> None:
    moment = parse_time("2025-01-02T03:04:05Z")
    assert format_micro_time(moment) == "2025-01-02T03:04:05.000000Z"
    assert parse_time(format_micro_time(moment)) == moment
