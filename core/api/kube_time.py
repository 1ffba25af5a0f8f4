"""Kubernetes times on the wire: RFC 3339 in UTC, read and written in one place.

The apiserver writes `Time` fields (`creationTimestamp`, `lastTransitionTime`) at second
precision and `MicroTime` fields (Lease renewals, Event times) with six fractional digits,
both with a `Z`; fleetq's own annotations may carry an offset (`+00:00`) instead. Every
hand-written reader of such a string goes through `parse_time`, every writer of a `Time`
through `format_time` (MicroTime: `core.kube.micro_time.format_micro_time`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (`...Z` or `...+hh:mm`, any fraction) as an aware datetime in UTC.

    A time without an offset (never written by Kubernetes) is taken as UTC, not local time.
    Raises ValueError when `text` is not such a time.
    """
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_optional_time(value: Any) -> datetime | None:
    """`parse_time` for a field that may be absent or malformed: None for either."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def format_time(moment: datetime) -> str:
    """A `Time` as Kubernetes writes it: seconds precision, in UTC, with a `Z`."""
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)
