"""The `offset` and `limit` query parameters of a pending-workloads request.

Upstream parses each as a base-10 int64 (first value wins, unknown parameters are
ignored) and treats an absent or zero `limit` as the default of 1000. It does not guard
against negative numbers (a negative limit crashes its handler with a 500); fleetq
answers those, and limits above the maximum, with a 400 that names the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hub.visibility.status import Status, bad_request

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
_INT64_MAX = 2**63 - 1
# Go's strconv.ParseInt(s, 10, 64): an optional sign and ASCII digits, nothing else.
_DECIMAL = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class PendingWorkloadOptions:
    """Which window of the queue to return: positions `offset` .. `offset + limit - 1`."""

    offset: int = 0
    limit: int = DEFAULT_LIMIT


def _parse_int(name: str, raw: str) -> int | Status:
    if not _DECIMAL.fullmatch(raw):
        return bad_request(f'query parameter "{name}": "{raw}" is not an integer')
    value = int(raw)
    if value < 0:
        return bad_request(f'query parameter "{name}" must not be negative, got {value}')
    if value > _INT64_MAX:
        return bad_request(f'query parameter "{name}": {raw} is out of range')
    return value


def parse_options(query: Mapping[str, str]) -> PendingWorkloadOptions | Status:
    """Options from a request's query (a MultiDict maps each name to its first value)."""
    offset = 0
    raw_offset = query.get("offset")
    if raw_offset is not None:
        parsed = _parse_int("offset", raw_offset)
        if isinstance(parsed, Status):
            return parsed
        offset = parsed
    limit = DEFAULT_LIMIT
    raw_limit = query.get("limit")
    if raw_limit is not None:
        parsed = _parse_int("limit", raw_limit)
        if isinstance(parsed, Status):
            return parsed
        if parsed > MAX_LIMIT:
            return bad_request(f'query parameter "limit" must be at most {MAX_LIMIT}, got {parsed}')
        limit = parsed or DEFAULT_LIMIT
    return PendingWorkloadOptions(offset=offset, limit=limit)
