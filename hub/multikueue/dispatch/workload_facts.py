"""Facts read from Workload JSON (manager or worker), the only vocabulary the planner needs.

Caches hold Workloads as decoded JSON; these small readers keep the planner free of
`.get(...) or {}` chains and spell condition types and reasons through the API's enums.
Times are seconds since the epoch (None when absent or unparsable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.api.admission_check import CheckState
from core.api.json_types import Json
from core.api.kube_time import parse_optional_time
from core.api.workload_conditions import WorkloadConditionType as Cond


def metadata(obj: Json) -> Json:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def spec(obj: Json) -> Json:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def status(obj: Json) -> Json:
    value = obj.get("status")
    return value if isinstance(value, Mapping) else {}


def parse_time(text: Any) -> float | None:
    """A Kubernetes time as epoch seconds; None when absent or malformed."""
    moment = parse_optional_time(text)
    return None if moment is None else moment.timestamp()


@dataclass(frozen=True, slots=True)
class ConditionFact:
    """One condition that is True: its reason, message and when it became True."""

    reason: str
    message: str
    since: float | None


def true_condition(obj: Json, type_: str) -> ConditionFact | None:
    """The condition `type_` if it is True, else None."""
    for condition in status(obj).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            if condition.get("status") != "True":
                return None
            return ConditionFact(
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
                since=parse_time(condition.get("lastTransitionTime")),
            )
    return None


def has_true(obj: Json, type_: str) -> bool:
    return true_condition(obj, type_) is not None


def is_finished(obj: Json) -> bool:
    return has_true(obj, Cond.FINISHED)


def has_quota_reservation(obj: Json) -> bool:
    return has_true(obj, Cond.QUOTA_RESERVED)


def is_deleting(obj: Json) -> bool:
    return bool(metadata(obj).get("deletionTimestamp"))


def cluster_name(obj: Json) -> str | None:
    value = status(obj).get("clusterName")
    return str(value) if value else None


def nominated_cluster_names(obj: Json) -> tuple[str, ...]:
    return tuple(str(name) for name in status(obj).get("nominatedClusterNames") or ())


def queue_name(obj: Json) -> str:
    return str(spec(obj).get("queueName") or "")


def cluster_queue(obj: Json) -> str:
    admission = status(obj).get("admission")
    return str(admission.get("clusterQueue") or "") if isinstance(admission, Mapping) else ""


@dataclass(frozen=True, slots=True)
class CheckFact:
    """One entry of `status.admissionChecks`."""

    name: str
    state: CheckState | None
    """None when the state is not one of the four upstream names."""
    message: str
    since: float | None


def admission_checks(obj: Json) -> list[CheckFact]:
    out = []
    for entry in status(obj).get("admissionChecks") or ():
        if not isinstance(entry, Mapping):
            continue
        raw = str(entry.get("state") or "")
        state = CheckState(raw) if raw in CheckState.__members__.values() else None
        out.append(
            CheckFact(
                name=str(entry.get("name") or ""),
                state=state,
                message=str(entry.get("message") or ""),
                since=parse_time(entry.get("lastTransitionTime")),
            )
        )
    return out


def find_check(obj: Json, name: str) -> CheckFact | None:
    for check in admission_checks(obj):
        if check.name == name:
            return check
    return None


def others_ready(obj: Json, name: str) -> bool:
    """Whether every admission check except `name` is Ready (upstream nominates only then)."""
    return all(c.state is CheckState.READY for c in admission_checks(obj) if c.name != name)


@dataclass(frozen=True, slots=True)
class OwnerFact:
    api_version: str
    kind: str
    name: str
    uid: str

    @property
    def gvk_text(self) -> str:
        """`group/version, Kind=Kind` as upstream prints a GroupVersionKind in messages."""
        return f"{self.api_version}, Kind={self.kind}"


def controller_owner(obj: Json) -> OwnerFact | None:
    """The controlling owner, or the first owner when none controls (as upstream)."""
    refs: Sequence[Any] = metadata(obj).get("ownerReferences") or ()
    chosen = next((r for r in refs if isinstance(r, Mapping) and r.get("controller")), None)
    if chosen is None and refs and isinstance(refs[0], Mapping):
        chosen = refs[0]
    if chosen is None:
        return None
    return OwnerFact(
        api_version=str(chosen.get("apiVersion") or ""),
        kind=str(chosen.get("kind") or ""),
        name=str(chosen.get("name") or ""),
        uid=str(chosen.get("uid") or ""),
    )
