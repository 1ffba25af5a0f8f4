"""Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, always in UTC.

Lease renew times and Event times are MicroTime fields; the apiserver rejects a value
without the fractional part, which a generic datetime encoder drops when it is zero.
Reading any Kubernetes time, MicroTime included, is `core.api.kube_time.parse_time`.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_now() -> datetime:
    return datetime.now(UTC)
