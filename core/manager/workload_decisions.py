"""What a Workload's status says was decided, and how to take in a decision made elsewhere.

The hub writes most of a Workload's status itself, but not all of it: upstream's perf
runner marks Workloads Finished and completes evictions by clearing the reservation,
admission-check controllers set check states, and while this replica follows, the leader
writes everything. When a status changes and the change is not the hub's own write, the
engine must catch up. The decision state is the part that matters for quota (reserved,
admitted, evicted, finished, where, check states); `classify` says which engine call
brings the engine to what the object says.

Upstream's perf runner marks Workloads Finished (reason `ByTest`) and completes evictions
by clearing the reservation; the leader, seen from a follower, writes everything. In each
case the object is the truth and the engine adopts it as it is, exactly as a restarted
hub would (quota released or charged, the workload queued or not), so nothing is
rewritten in its name. Only admission-check states, written by check controllers, are
set one by one, since the engine reacts to them (admit when all are Ready, evict on
Retry, deactivate on Rejected).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.api.json_types import Json
from core.api.workload_conditions import WorkloadConditionType as Cond


@dataclass(frozen=True, slots=True)
class DecisionState:
    """The quota-relevant facts of one Workload status."""

    quota_reserved: bool
    admitted: bool
    evicted: bool
    finished: bool
    admission: Any
    check_states: tuple[tuple[str, str], ...]


class ExternalChange(enum.Enum):
    """How the engine takes in a status another writer produced."""

    NONE = "none"
    """The engine already agrees."""
    CHECKS = "checks"
    """Only admission-check states differ: set them, the engine reacts."""
    ADOPT = "adopt"
    """Anything else (finished, reservation cleared or set, evicted): forget the workload
    and adopt the object as it is."""


def condition_true(status: Json, type_: str) -> bool:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            return condition.get("status") == "True"
    return False


def condition_of(status: Json, type_: str) -> Json | None:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            return condition
    return None


def check_states(status: Json) -> dict[str, str]:
    return {
        str(check.get("name")): str(check.get("state"))
        for check in status.get("admissionChecks") or ()
        if isinstance(check, Mapping)
    }


def decision_state(status: Json) -> DecisionState:
    admission = status.get("admission") or None
    return DecisionState(
        quota_reserved=condition_true(status, Cond.QUOTA_RESERVED),
        admitted=condition_true(status, Cond.ADMITTED),
        evicted=condition_true(status, Cond.EVICTED),
        finished=condition_true(status, Cond.FINISHED),
        admission=_admission_key(admission),
        check_states=tuple(sorted(check_states(status).items())),
    )


def _admission_key(admission: Any) -> Any:
    if not isinstance(admission, Mapping):
        return None
    return (
        admission.get("clusterQueue"),
        tuple(
            (
                psa.get("name"),
                tuple(sorted((psa.get("flavors") or {}).items())),
                psa.get("count"),
            )
            for psa in admission.get("podSetAssignments") or ()
            if isinstance(psa, Mapping)
        ),
    )


def classify(observed: DecisionState, believed: DecisionState) -> ExternalChange:
    """How the engine (believing `believed`) takes in `observed`, the object's state."""
    if observed == believed:
        return ExternalChange.NONE
    same_but_checks = (
        observed.quota_reserved == believed.quota_reserved
        and observed.evicted == believed.evicted
        and observed.finished == believed.finished
        and observed.admission == believed.admission
    )
    if same_but_checks and observed.check_states != believed.check_states:
        return ExternalChange.CHECKS
    return ExternalChange.ADOPT
