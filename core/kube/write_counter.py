"""Counts apiserver writes per cluster by verb and resource.

Writes are fleetq's bottleneck (DESIGN §5), so every create/update/patch/apply/delete a
client sends is counted, including ones the apiserver rejects (they cost it the same). The
hub turns the totals into the "apiserver writes per admitted workload" metric; benchmarks
read `snapshot()` before and after a run.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass


class WriteVerb(enum.StrEnum):
    """The write verbs, named as the apiserver's audit log and metrics name them."""

    CREATE = "create"
    UPDATE = "update"
    PATCH = "patch"
    APPLY = "apply"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class WriteKey:
    """One counter: a verb on a resource (subresource included, e.g. workloads/status)."""

    verb: WriteVerb
    resource: str


class WriteCounter:
    """Per-cluster write tally; cheap enough to call on every request."""

    __slots__ = ("_counts", "_failed")

    def __init__(self) -> None:
        self._counts: Counter[WriteKey] = Counter()
        self._failed: Counter[WriteKey] = Counter()

    def record(self, verb: WriteVerb, resource: str, *, failed: bool = False) -> None:
        key = WriteKey(verb, resource)
        self._counts[key] += 1
        if failed:
            self._failed[key] += 1

    def count(self, verb: WriteVerb | None = None, resource: str | None = None) -> int:
        """Writes sent, optionally only of one verb and/or one resource."""
        return sum(
            n
            for key, n in self._counts.items()
            if (verb is None or key.verb is verb) and (resource is None or key.resource == resource)
        )

    def failed(self, verb: WriteVerb | None = None, resource: str | None = None) -> int:
        """Writes the apiserver rejected (conflicts, validation errors, ...)."""
        return sum(
            n
            for key, n in self._failed.items()
            if (verb is None or key.verb is verb) and (resource is None or key.resource == resource)
        )

    def snapshot(self) -> dict[WriteKey, int]:
        return dict(self._counts)

    @property
    def total(self) -> int:
        return sum(self._counts.values())
