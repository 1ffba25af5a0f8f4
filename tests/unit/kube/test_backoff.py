"""Exponential backoff: doubling from the base, capped, jitter only ever adds."""

from __future__ import annotations

import random

import pytest

from core.kube.backoff import ExponentialBackoff


def test_delays_double_from_the_base_up_to_the_cap() -> None:
    backoff = ExponentialBackoff(base_seconds=0.5, cap_seconds=5.0)
    assert [backoff.delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_a_key_failing_for_days_stays_at_the_cap() -> None:
    backoff = ExponentialBackoff(base_seconds=0.005, cap_seconds=1000.0, factor=10)
    assert backoff.delay(10_000) == 1000.0


def test_jitter_adds_up_to_the_given_fraction() -> None:
    backoff = ExponentialBackoff(base_seconds=1.0, cap_seconds=8.0, jitter=0.5)
    rng = random.Random(7)
    samples = [backoff.delay(2, rng=rng) for _ in range(200)]
    assert all(4.0 <= s <= 6.0 for s in samples)
    assert max(samples) - min(samples) > 1.0, "jitter must spread retries"


@pytest.mark.parametrize(
    ("base", "cap", "factor", "jitter"),
    [(0, 1, 2, 0), (2, 1, 2, 0), (1, 2, 0.5, 0), (1, 2, 2, -1)],
)
def test_nonsense_settings_are_refused(
    base: float, cap: float, factor: float, jitter: float
) -> None:
    with pytest.raises(ValueError):
        ExponentialBackoff(base, cap, factor, jitter)
