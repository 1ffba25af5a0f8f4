"""Nearest-rank percentiles, the one definition the simulators and benchmarks report with."""

from __future__ import annotations

import math
from collections.abc import Iterable


def nearest_rank(values: Iterable[float], fraction: float) -> float | None:
    """The value at rank ceil(fraction times n) of the sorted values (None for no values)."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]
