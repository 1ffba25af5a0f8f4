"""How long a worker that could not be reached waits before the next connection attempt.

Upstream's schedule: after the n-th failed attempt in a row wait base·2^(n-1), with n
capped at 7, i.e. 5 s, 10 s, 20 s ... 320 s (5 min 20 s) with the default 5 s base. No
jitter, so the next-attempt time written into the condition is the real one. A changed
kubeconfig resets the count (the new one may well work).
"""

from __future__ import annotations

from dataclasses import dataclass

UPSTREAM_BASE_SECONDS = 5.0
UPSTREAM_MAX_STEPS = 7


@dataclass(frozen=True, slots=True)
class ReconnectBackoff:
    """The reconnect delay as a function of failed attempts in a row."""

    base_seconds: float = UPSTREAM_BASE_SECONDS
    max_steps: int = UPSTREAM_MAX_STEPS

    def __post_init__(self) -> None:
        if self.base_seconds <= 0 or self.max_steps < 1:
            raise ValueError("need base_seconds > 0 and max_steps >= 1")

    def delay(self, failed_attempts: int) -> float:
        """Seconds to wait after `failed_attempts` failures in a row (0 after none)."""
        if failed_attempts <= 0:
            return 0.0
        return float(self.base_seconds * 2 ** (min(failed_attempts, self.max_steps) - 1))

    @property
    def longest_seconds(self) -> float:
        return self.delay(self.max_steps)
