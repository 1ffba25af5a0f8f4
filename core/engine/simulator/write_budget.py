"""The manager's API client rate limit, as a first-come-first-served token bucket.

client-go limits a client to ``qps`` requests per second with a burst of ``burst``; callers
block until a token is free. This computes, for a write issued at a virtual instant, the
instant it gets its token, using the generic cell rate algorithm (one number of state:
the theoretical arrival time of the next request).
"""

from __future__ import annotations


class WriteBudget:
    """Grants write slots in issue order; ``qps=None`` grants every write at once."""

    __slots__ = ("_interval", "_next", "_tolerance", "granted")

    def __init__(self, qps: float | None, burst: int) -> None:
        if qps is not None and qps <= 0:
            raise ValueError(f"qps must be positive or None, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._interval = 0.0 if qps is None else 1.0 / qps
        self._tolerance = (burst - 1) * self._interval
        self._next = 0.0
        self.granted = 0
        """Writes granted so far (the apiserver write count of the run)."""

    def acquire(self, now: float) -> float:
        """Reserve the next token for a write issued at ``now``; return when it is granted."""
        self.granted += 1
        if self._interval == 0.0:
            return now
        grant = max(now, self._next - self._tolerance)
        self._next = max(self._next, grant) + self._interval
        return grant
