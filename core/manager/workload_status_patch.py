"""From the engine's view of a Workload's status to the merge patch that makes it so.

The engine owns a fixed set of status fields (conditions, admission, requeue state,
admission checks, reclaimable pods, accumulated execution time, scheduling stats); other
writers own the rest (MultiKueue's clusterName, unhealthyNodes, ...), so a patch names
only owned fields, sets a field the engine no longer has to null, and leaves the rest
alone. Fields already equal to what the engine wants are left out, and a status that
already matches yields no patch at all: repeating a reconcile writes nothing.

Conditions compare by type, status, reason, message and transition time; their order
and observedGeneration do not count, since neither changes what the condition says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.adapters.kueue_manifests import workload_status_to_dict
from core.api.json_types import Json
from core.api.workload_conditions import WorkloadConditionType
from core.engine.model import WorkloadStatus

ENGINE_OWNED_FIELDS: Final = (
    "conditions",
    "admission",
    "requeueState",
    "admissionChecks",
    "reclaimablePods",
    "accumulatedPastExecutionTimeSeconds",
    "schedulingStats",
)
_CONDITION_FIELDS: Final = ("status", "reason", "message", "lastTransitionTime")


def owned_status(status: WorkloadStatus) -> dict[str, Any]:
    """Every engine-owned field as the engine wants it; absent fields are None."""
    rendered = workload_status_to_dict(status)
    return {name: rendered.get(name) for name in ENGINE_OWNED_FIELDS}


def _conditions_by_type(conditions: Any) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for condition in conditions or ():
        if isinstance(condition, Mapping):
            out[str(condition.get("type"))] = tuple(
                condition.get(field) or "" for field in _CONDITION_FIELDS
            )
    return out


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {} or value == 0


def field_differs(name: str, current: Any, wanted: Any) -> bool:
    if name == "conditions":
        return _conditions_by_type(current) != _conditions_by_type(wanted)
    if _empty(current) and _empty(wanted):
        return False
    return bool(current != wanted)


def status_patch(current: Json | None, wanted: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch for `status` turning `current` into `wanted`, or None if equal.

    Only owned fields named in `wanted` are considered (`owned_status` names them all).
    """
    current = current or {}
    patch = {
        name: wanted[name]
        for name in ENGINE_OWNED_FIELDS
        if name in wanted and field_differs(name, current.get(name), wanted[name])
    }
    return patch or None


def is_pending_note(current: Json, patch: Mapping[str, Any]) -> bool:
    """Whether `patch` only says, or re-words, why a queued Workload is not reserved yet.

    That is: it changes nothing but conditions, and the only condition it changes is
    QuotaReserved, which was not True before and stays False. Such a note decides nothing
    (no quota moves), so it may wait for spare write budget.
    """
    if set(patch) != {"conditions"}:
        return False
    before = _conditions_by_type(current.get("conditions"))
    after = _conditions_by_type(patch.get("conditions"))
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    if changed != {WorkloadConditionType.QUOTA_RESERVED}:
        return False
    was = before.get(WorkloadConditionType.QUOTA_RESERVED)
    now = after.get(WorkloadConditionType.QUOTA_RESERVED)
    return now is not None and now[0] == "False" and (was is None or was[0] == "False")


def changed_conditions(current: Json, patch: Mapping[str, Any]) -> list[str]:
    """`Type=Status/Reason` of each condition a patch changes (for debug logs)."""
    before = _conditions_by_type(current.get("conditions"))
    after = _conditions_by_type(patch.get("conditions"))
    return [
        f"{name}={fields[0]}/{fields[1]}"
        for name, fields in sorted(after.items())
        if before.get(name) != fields
    ]


def owned_fields_differ(a: Json, b: Json) -> bool:
    """Whether two statuses differ in any engine-owned field."""
    return any(field_differs(name, a.get(name), b.get(name)) for name in ENGINE_OWNED_FIELDS)


def status_of(workload: Json) -> Json:
    status = workload.get("status")
    return status if isinstance(status, Mapping) else {}
