"""Workload: how its priority class is named, a misspelt status field, and the topology
assignment's encoding.

- v1beta1 `spec.priorityClassName` + `spec.priorityClassSource`
  (`kueue.x-k8s.io/workloadpriorityclass` or `scheduling.k8s.io/priorityclass`) are
  v1beta2's `spec.priorityClassRef` (group, kind, name). A name with an empty source
  names no class in v1beta2 and is dropped, as upstream does.
- v1beta1 `status.accumulatedPastExexcutionTimeSeconds` (sic) is v1beta2's
  `accumulatedPastExecutionTimeSeconds`.
- `status.admission.podSetAssignments[].topologyAssignment`: domains <-> slices.
- v1beta2's preemption gates and pod-set slice topology constraints have no v1beta1
  field and are kept in the preservation annotation.
"""

from __future__ import annotations

from typing import Final

from core.api.conversion import topology_assignment
from core.api.conversion.fields import JsonObject, child, items, rename
from core.api.conversion.preserved import restore_fields, stash_fields

V1BETA2_ONLY: Final = (
    "spec.preemptionGates",
    "status.preemptionGates",
    "spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints",
)

PRIORITY_SOURCES: Final = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
"""v1beta1 priorityClassSource -> v1beta2 priorityClassRef group and kind."""

_SOURCE_OF = {group_kind: source for source, group_kind in PRIORITY_SOURCES.items()}
_MISSPELT = "accumulatedPastExexcutionTimeSeconds"
_SPELT = "accumulatedPastExecutionTimeSeconds"


def _assignments(obj: JsonObject) -> list[JsonObject]:
    return items(child(obj, "status", "admission"), "podSetAssignments")


def to_v1beta1(obj: JsonObject) -> None:
    stash_fields(obj, V1BETA2_ONLY)
    spec = child(obj, "spec")
    ref = spec.pop("priorityClassRef", None) if spec is not None else None
    if spec is not None and isinstance(ref, dict):
        source = _SOURCE_OF.get((str(ref.get("group")), str(ref.get("kind"))))
        if source is not None:
            spec["priorityClassSource"] = source
            spec["priorityClassName"] = ref.get("name")
    rename(child(obj, "status"), _SPELT, _MISSPELT)
    for assignment in _assignments(obj):
        placement = child(assignment, "topologyAssignment")
        if placement is not None:
            assignment["topologyAssignment"] = topology_assignment.to_v1beta1(placement)


def to_v1beta2(obj: JsonObject) -> None:
    spec = child(obj, "spec")
    if spec is not None:
        source = spec.pop("priorityClassSource", None)
        name = spec.pop("priorityClassName", None)
        group_kind = PRIORITY_SOURCES.get(source) if isinstance(source, str) else None
        if group_kind is not None and name:
            group, kind = group_kind
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}
    rename(child(obj, "status"), _MISSPELT, _SPELT)
    for assignment in _assignments(obj):
        placement = child(assignment, "topologyAssignment")
        if placement is not None:
            assignment["topologyAssignment"] = topology_assignment.to_v1beta2(placement)
    restore_fields(obj)
