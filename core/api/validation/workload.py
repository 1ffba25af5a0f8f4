"""Cross-field rules of Workloads, on create and on update.

Mirrors upstream's CEL rules and webhook: pod-set counts, partial admission, the reserved
`pods` resource and non-negative requests and limits (upstream's
WorkloadValidateResourcesAreNonNegative, on by default since v0.19), consistency of
admission with the spec, and what may not change while quota is reserved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from core.api.meta import ConditionStatus
from core.api.quantity import is_quantity, parse_quantity
from core.api.validation.field_errors import (
    ROOT,
    FieldError,
    FieldPath,
    forbidden,
    invalid,
    not_found,
    required,
)
from core.api.validation.labels import validate_annotation_keys, validate_labels
from core.api.validation.placement import validate_tolerations
from core.api.workload import (
    RESERVED_POD_RESOURCE,
    Admission,
    PriorityClassGroup,
    PriorityClassKind,
    Workload,
)
from core.api.workload_conditions import WorkloadConditionType
from core.api.workload_slices import ELASTIC_JOB_ANNOTATION, ELASTIC_JOB_ENABLED

# Upstream's (apimachinery's) wording for a quantity below zero.
NEGATIVE_QUANTITY_MESSAGE = "must be greater than or equal to 0"

_EXPECTED_KIND = {
    PriorityClassGroup.KUEUE: PriorityClassKind.WORKLOAD_PRIORITY_CLASS,
    PriorityClassGroup.SCHEDULING: PriorityClassKind.PRIORITY_CLASS,
}


def has_condition(wl: Workload, condition: WorkloadConditionType) -> bool:
    return any(
        c.type == condition and c.status is ConditionStatus.TRUE for c in wl.status.conditions
    )


def quota_reserved(wl: Workload) -> bool:
    return has_condition(wl, WorkloadConditionType.QUOTA_RESERVED)


def validate_workload(wl: Workload, old: Workload | None = None) -> list[FieldError]:
    """Rules on a Workload; with `old` (an update), pod templates left as they were are
    not judged again by the resource rules, so a Workload stored before a rule existed
    can still have its status written (as the apiserver ratchets its schema)."""
    spec_path = ROOT.child("spec")
    old_templates = {} if old is None else {ps.name: ps.template for ps in old.spec.pod_sets}
    errors: list[FieldError] = []
    pod_sets_path = spec_path.child("podSets")
    if not wl.spec.pod_sets:
        errors.append(required(pod_sets_path, "at least one pod set is needed"))
    with_min_count = [p for p, ps in enumerate(wl.spec.pod_sets) if ps.min_count is not None]
    if len(with_min_count) > 1:
        errors.append(
            invalid(
                pod_sets_path,
                f"at most one pod set may set minCount, got {len(with_min_count)}"
                f" (indexes {with_min_count})",
            )
        )
    for position, pod_set in enumerate(wl.spec.pod_sets):
        item = pod_sets_path.index(position)
        if pod_set.min_count is not None and pod_set.min_count > pod_set.count:
            errors.append(
                invalid(
                    item.child("minCount"),
                    f"{pod_set.min_count} must not be greater than count ({pod_set.count})",
                )
            )
        if old_templates.get(pod_set.name) != pod_set.template:
            errors.extend(_pod_set_resources(pod_set.template, item.child("template", "spec")))
    ref = wl.spec.priority_class_ref
    if ref is not None:
        if wl.spec.priority is None:
            errors.append(
                required(spec_path.child("priority"), "must be set with priorityClassRef")
            )
        if ref.kind != _EXPECTED_KIND[ref.group]:
            errors.append(
                invalid(
                    spec_path.child("priorityClassRef", "kind"),
                    f"group {ref.group} requires kind {_EXPECTED_KIND[ref.group]}",
                )
            )
    errors.extend(_validate_status(wl, old))
    return errors


# The resource lists of a container or of a pod.
_RESOURCE_LISTS = ("requests", "limits")


def _resource_lists(template: dict[str, Any], path: FieldPath) -> list[tuple[FieldPath, Any]]:
    """Every requests/limits map of a pod template (containers, init containers and
    pod-level resources), with its field path; parts that are not objects are skipped
    (the schema check reports them)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict):
        return []
    found: list[tuple[FieldPath, Any]] = []
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for position, container in enumerate(containers):
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                where = path.child(group).index(position).child("resources")
                found += [(where.child(name), resources.get(name)) for name in _RESOURCE_LISTS]
    pod_level = spec.get("resources")
    if isinstance(pod_level, dict):
        where = path.child("resources")
        found += [(where.child(name), pod_level.get(name)) for name in _RESOURCE_LISTS]
    return [(where, listed) for where, listed in found if isinstance(listed, dict) and listed]


def _pod_set_resources(template: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """Upstream's webhook rules for resource lists: the `pods` key is Kueue's own, and no
    quantity may be negative (a negative request would free quota it never held)."""
    errors: list[FieldError] = []
    for where, listed in _resource_lists(template, path):
        for resource, quantity in listed.items():
            if resource == RESERVED_POD_RESOURCE:
                errors.append(
                    invalid(
                        where.key(RESERVED_POD_RESOURCE),
                        "the 'pods' resource is reserved for Kueue's own accounting",
                    )
                )
            if is_quantity(quantity) and parse_quantity(quantity) < 0:
                errors.append(
                    invalid(where.key(resource), f'"{quantity}": {NEGATIVE_QUANTITY_MESSAGE}')
                )
    return errors


def _elastic(wl: Workload) -> bool:
    return wl.metadata.annotations.get(ELASTIC_JOB_ANNOTATION) == ELASTIC_JOB_ENABLED


def _stale_reclaimable(wl: Workload, old: Workload | None, name: str, count: int) -> bool:
    """A reclaimable count left above its pod set's count by an elastic scale-down and not
    changed since: it converges once the job reports again (upstream's kueue#12670)."""
    if old is None or not _elastic(wl):
        return False
    return any(r.name == name and r.count == count for r in old.status.reclaimable_pods)


def _scaled_down_pod_sets(wl: Workload) -> set[str]:
    """Pod sets of an elastic Workload now counting fewer pods than it was admitted with."""
    admission = wl.status.admission
    if not _elastic(wl) or admission is None:
        return set()
    counts = {ps.name: ps.count for ps in wl.spec.pod_sets}
    return {
        psa.name
        for psa in admission.pod_set_assignments
        if psa.count is not None and psa.count > counts.get(psa.name, psa.count)
    }


def _validate_status(wl: Workload, old: Workload | None = None) -> list[FieldError]:
    status = wl.status
    path = ROOT.child("status")
    errors: list[FieldError] = []
    pod_sets = {ps.name: ps for ps in wl.spec.pod_sets}
    if status.cluster_name is not None and status.nominated_cluster_names:
        errors.append(
            forbidden(
                path.child("nominatedClusterNames"),
                "must be empty once clusterName is set",
            )
        )
    if status.admission is not None and quota_reserved(wl):
        assignments_path = path.child("admission", "podSetAssignments")
        if len(status.admission.pod_set_assignments) != len(wl.spec.pod_sets):
            errors.append(
                invalid(
                    assignments_path,
                    f"needs one entry per spec.podSets entry ({len(wl.spec.pod_sets)}),"
                    f" got {len(status.admission.pod_set_assignments)}",
                )
            )
        for position, assignment in enumerate(status.admission.pod_set_assignments):
            item = assignments_path.index(position)
            if assignment.name not in pod_sets:
                errors.append(
                    not_found(item.child("name"), f"no pod set named {assignment.name!r}")
                )
            errors.extend(_usage_divisible(assignment.count, assignment.resource_usage, item))
    for position, reclaimable in enumerate(status.reclaimable_pods):
        item = path.child("reclaimablePods").index(position)
        pod_set = pod_sets.get(reclaimable.name)
        if pod_set is None:
            errors.append(not_found(item.child("name"), f"no pod set named {reclaimable.name!r}"))
        elif reclaimable.count > pod_set.count and not _stale_reclaimable(
            wl, old, reclaimable.name, reclaimable.count
        ):
            errors.append(
                invalid(
                    item.child("count"),
                    f"{reclaimable.count} is more than the pod set's count ({pod_set.count})",
                )
            )
    for c, check in enumerate(status.admission_checks):
        for u, update in enumerate(check.pod_set_updates):
            item = path.child("admissionChecks").index(c).child("podSetUpdates").index(u)
            if update.name not in pod_sets:
                errors.append(not_found(item.child("name"), f"no pod set named {update.name!r}"))
            errors += validate_labels(update.labels, item.child("labels"))
            errors += validate_labels(update.node_selector, item.child("nodeSelector"))
            errors += validate_annotation_keys(update.annotations, item.child("annotations"))
            errors += validate_tolerations(update.tolerations, item.child("tolerations"))
    return errors


def _usage_divisible(
    count: int | None, usage: Mapping[str, str], path: FieldPath
) -> list[FieldError]:
    """Total usage of a pod set must split evenly over its pods."""
    if not count:
        return []
    errors: list[FieldError] = []
    for resource, quantity in usage.items():
        if not is_quantity(quantity):
            continue
        unit = 1000 if resource == "cpu" else 1
        scaled = parse_quantity(quantity) * unit
        if scaled.denominator != 1 or int(scaled) % count:
            errors.append(
                invalid(
                    path.child("resourceUsage").key(resource),
                    f"{quantity} is not a multiple of count ({count})",
                )
            )
    return errors


def _pod_sets_same_or_scaled_down(old: Workload, new: Workload) -> bool:
    """Pod sets unchanged, or (an elastic job's Workload, upstream's workload slices) only
    their counts lowered: a scale-down shrinks the admitted Workload in place."""
    if new.spec.pod_sets == old.spec.pod_sets:
        return True
    if not _elastic(new):
        return False
    if len(new.spec.pod_sets) != len(old.spec.pod_sets):
        return False
    for before, after in zip(old.spec.pod_sets, new.spec.pod_sets, strict=True):
        if after.count > before.count:
            return False
        if msgspec.structs.replace(after, count=before.count) != before:
            return False
    return True


def validate_workload_update(old: Workload, new: Workload) -> list[FieldError]:
    errors = validate_workload(new, old)
    spec_path = ROOT.child("spec")
    status_path = ROOT.child("status")
    old_reserved, new_reserved = quota_reserved(old), quota_reserved(new)
    if old_reserved and not _pod_sets_same_or_scaled_down(old, new):
        errors.append(invalid(spec_path.child("podSets"), "cannot change while quota is reserved"))
    if old_reserved and new_reserved and old.spec.queue_name != new.spec.queue_name:
        errors.append(
            invalid(spec_path.child("queueName"), "cannot change while quota is reserved")
        )
    old_ref, new_ref = old.spec.priority_class_ref, new.spec.priority_class_ref
    if old_reserved:
        ref_path = spec_path.child("priorityClassRef")
        if (old_ref is None) != (new_ref is None):
            errors.append(invalid(ref_path, "cannot be added or removed while quota is reserved"))
        elif old_ref is not None and new_ref is not None:
            if (old_ref.group, old_ref.kind) != (new_ref.group, new_ref.kind):
                errors.append(
                    invalid(ref_path, "group and kind cannot change while quota is reserved")
                )
            elif new_ref.group is PriorityClassGroup.SCHEDULING and old_ref.name != new_ref.name:
                errors.append(
                    invalid(
                        ref_path.child("name"),
                        "a pod PriorityClass cannot change while quota is reserved",
                    )
                )
    admitted = WorkloadConditionType.ADMITTED
    if (
        has_condition(old, admitted)
        and has_condition(new, admitted)
        and old.spec.maximum_execution_time_seconds != new.spec.maximum_execution_time_seconds
    ):
        errors.append(
            invalid(
                spec_path.child("maximumExecutionTimeSeconds"),
                "cannot change while the workload is admitted",
            )
        )
    if (
        old.status.admission is not None
        and new.status.admission is not None
        and _without_topology(old.status.admission) != _without_topology(new.status.admission)
    ):
        errors.append(
            invalid(
                status_path.child("admission"),
                "cannot change once set (it may only be cleared)",
            )
        )
    errors.extend(_cluster_name_update(old, new, status_path))
    if old_reserved and new_reserved:
        errors.extend(_reclaimable_update(old, new, status_path.child("reclaimablePods")))
    return errors


def _without_topology(admission: Admission) -> Admission:
    """The admission minus what may change once set: as upstream with TAS on, a topology
    assignment may be set or replaced (a failed node's pods move, a delayed placement is
    made), every other part stays."""
    return msgspec.structs.replace(
        admission,
        pod_set_assignments=[
            msgspec.structs.replace(psa, topology_assignment=None, delayed_topology_request=None)
            for psa in admission.pod_set_assignments
        ],
    )


def _cluster_name_update(old: Workload, new: Workload, path: FieldPath) -> list[FieldError]:
    before, after = old.status.cluster_name, new.status.cluster_name
    if before is not None and after is not None and before != after:
        return [invalid(path.child("clusterName"), f"cannot change once set (was {before!r})")]
    if before is None and after is not None and after not in old.status.nominated_cluster_names:
        return [
            invalid(
                path.child("clusterName"),
                f"{after!r} must be one of the nominatedClusterNames"
                f" {old.status.nominated_cluster_names}",
            )
        ]
    return []


def _reclaimable_update(old: Workload, new: Workload, path: FieldPath) -> list[FieldError]:
    before = {r.name: r.count for r in old.status.reclaimable_pods}
    after = {r.name: r.count for r in new.status.reclaimable_pods}
    # An elastic job's scaled-down pod set re-derives its count (kueue#12670, #12958).
    scaled_down = _scaled_down_pod_sets(new)
    errors: list[FieldError] = []
    for name, count in before.items():
        if name in scaled_down:
            continue
        if name not in after:
            errors.append(required(path.key(name), "cannot be removed while quota is reserved"))
        elif after[name] < count:
            errors.append(invalid(path.key(name).child("count"), f"cannot decrease below {count}"))
    return errors
