"""Durations as people write them in a fleet file: `30d`, `720h`, `1h30m`, `600s`.

Go's duration syntax (what Kubernetes users know) plus `d` for days, because token lifetimes
are naturally counted in days. Whole seconds only: the TokenRequest API takes seconds.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([dhms])")


class DurationError(ValueError):
    """The text is not a duration this module understands."""


def parse_duration(text: str | int) -> int:
    """Seconds in `text`; a bare integer means seconds."""
    if isinstance(text, bool):
        raise DurationError(f"{text!r} is not a duration")
    if isinstance(text, int):
        if text < 0:
            raise DurationError(f"{text} is negative")
        return text
    cleaned = text.strip()
    if cleaned.isdigit():
        return int(cleaned)
    position, total = 0, 0
    for match in _PART.finditer(cleaned):
        if match.start() != position:
            break
        total += int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(cleaned) or not cleaned:
        raise DurationError(f"{text!r} is not a duration (write it like 30d, 720h, 1h30m or 600s)")
    return total


def format_duration(seconds: float) -> str:
    """A short human form, largest units first: `29d23h`, `5m`, `0s`; negative gets a `-`."""
    sign = "-" if seconds < 0 else ""
    remaining = int(abs(seconds))
    parts: list[str] = []
    for unit, size in _UNIT_SECONDS.items():
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
        if len(parts) == 2:
            break
    return sign + ("".join(parts) or "0s")
