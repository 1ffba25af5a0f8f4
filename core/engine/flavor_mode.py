"""How well an assignment fits: the outcome both quota and topology placement report."""

from __future__ import annotations

from enum import IntEnum


class Mode(IntEnum):
    """Outcome of an assignment: ordered so that min() gives the representative one."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2
