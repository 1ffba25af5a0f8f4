"""The coordination.k8s.io/v1 Lease, typed, and the pure rules of who may hold it.

A Lease records its holder and when the holder last renewed. Expiry is judged the way
client-go does: by how long *this* candidate has watched the record stay unchanged
(`observed_at` on the local monotonic clock), never by comparing the renewTime written
by another machine with our wall clock, so clock skew between replicas cannot make two
of them believe they lead.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from core.api.api_struct import ApiStruct
from core.api.markers import always
from core.api.meta import ObjectMeta


class LeaseSpec(ApiStruct):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(ApiStruct):
    api_version: str = always("coordination.k8s.io/v1")
    kind: str = always("Lease")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


@dataclass(frozen=True, slots=True)
class ObservedLease:
    """A lease record as last seen, and when (monotonic seconds) it was first seen so."""

    holder: str
    renew_time: str
    transitions: int
    duration_seconds: float
    observed_at: float

    def same_record(self, spec: LeaseSpec) -> bool:
        return (
            self.holder == (spec.holder_identity or "")
            and self.renew_time == (spec.renew_time or "")
            and self.transitions == (spec.lease_transitions or 0)
        )


def observe(previous: ObservedLease | None, spec: LeaseSpec, now: float) -> ObservedLease:
    """Update the observation: the clock restarts only when the record changed."""
    if previous is not None and previous.same_record(spec):
        return previous
    return ObservedLease(
        holder=spec.holder_identity or "",
        renew_time=spec.renew_time or "",
        transitions=spec.lease_transitions or 0,
        duration_seconds=float(spec.lease_duration_seconds or 0),
        observed_at=now,
    )


def held_by_other(observed: ObservedLease, identity: str, now: float) -> bool:
    """Whether another candidate holds the lease and it has not expired yet."""
    if not observed.holder or observed.holder == identity:
        return False
    return now < observed.observed_at + observed.duration_seconds


def next_spec(current: LeaseSpec, identity: str, duration_seconds: int, now_text: str) -> LeaseSpec:
    """The spec to write when `identity` acquires or renews the lease."""
    renewing = current.holder_identity == identity
    transitions = current.lease_transitions or 0
    return LeaseSpec(
        holder_identity=identity,
        lease_duration_seconds=duration_seconds,
        acquire_time=current.acquire_time if renewing and current.acquire_time else now_text,
        renew_time=now_text,
        lease_transitions=transitions if renewing else transitions + 1,
    )


def released_spec(current: LeaseSpec, now_text: str) -> LeaseSpec:
    """The spec a leader writes when stepping down: no holder, so others take over at once."""
    return LeaseSpec(
        holder_identity="",
        lease_duration_seconds=1,
        acquire_time=now_text,
        renew_time=now_text,
        lease_transitions=current.lease_transitions or 0,
    )
