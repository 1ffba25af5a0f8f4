"""What admission adds to a pod set's pod template, and how a stop takes it back.

When a Workload is admitted, its job's pods must land on the admitted flavors' nodes:
the flavors' node labels become nodeSelector entries and their tolerations are appended;
admission checks may ask for more labels, annotations, selectors and tolerations; Kueue
adds a few labels of its own. All of it is gathered per pod set into a `PodSetInfo` and
merged into the job's template. A key the template already sets to another value is a
conflict: the pods could never match both, so starting fails with an error that names
the key and both values (upstream then finishes the Workload as FailedToStart).

On a stop the template's scheduling fields are put back exactly as the Workload recorded
them when it was built from the job, which undoes every merge above.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from core.api.json_types import JsonDict
from core.api.markers import DNS1123_LABEL
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import PodSet, PodSetAssignment, PodSetUpdate, Workload
from integrations.framework.labels import (
    CLUSTER_QUEUE_LABEL,
    LOCAL_QUEUE_LABEL,
    POD_SET_LABEL,
    POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
)

__all__ = [
    "InvalidPodSetInfo",
    "MissingFlavor",
    "PodSetConflict",
    "PodSetInfo",
    "info_from_assignment",
    "info_from_pod_set",
    "info_from_update",
    "infos_from_admission",
    "merge_info",
    "merge_into_template",
    "restore_template",
    "same_toleration",
]


# Where each scheduling field lives in a pod template.
_LABELS: Final = ("metadata", "labels")
_ANNOTATIONS: Final = ("metadata", "annotations")
_NODE_SELECTOR: Final = ("spec", "nodeSelector")
_TOLERATIONS: Final = ("spec", "tolerations")
_SCHEDULING_GATES: Final = ("spec", "schedulingGates")
RESTORED_FIELDS: Final = (_LABELS, _ANNOTATIONS, _NODE_SELECTOR, _TOLERATIONS, _SCHEDULING_GATES)


class InvalidPodSetInfo(ValueError):
    """The admission cannot be applied to the job; retrying cannot help.

    The controller should finish the Workload with reason FailedToStart and this message.
    """


class PodSetConflict(InvalidPodSetInfo):
    """Two sources set the same key of a pod set's labels/annotations/nodeSelector apart."""

    def __init__(
        self, pod_set: str, field_name: str, key: str, have: str, want: str, by: str, where: str
    ):
        self.pod_set, self.field_name, self.key = pod_set, field_name, key
        super().__init__(
            f'pod set "{pod_set}": {field_name} key "{key}" is "{have}"{where}, but {by} sets'
            f' it to "{want}"; the pods cannot satisfy both'
        )


class MissingFlavor(LookupError):
    """An admission names a ResourceFlavor the caller did not provide (not cached yet?)."""

    def __init__(self, flavor: str):
        self.flavor = flavor
        super().__init__(f'ResourceFlavor "{flavor}" of the admission was not found')


@dataclass(slots=True)
class PodSetInfo:
    """Scheduling fields for one pod set: added at start, or restored at stop."""

    name: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[JsonDict] = field(default_factory=list)
    scheduling_gates: list[JsonDict] = field(default_factory=list)


def _json_list(items: Iterable[msgspec.Struct]) -> list[JsonDict]:
    return [msgspec.to_builtins(item) for item in items]


def _toleration_key(toleration: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    # Go compares tolerations field by field, where an absent field is the zero value.
    return tuple(sorted((k, v) for k, v in toleration.items() if v not in ("", None)))


def same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two tolerations in JSON form mean the same (absent == empty)."""
    return _toleration_key(a) == _toleration_key(b)


def _append_missing(into: list[JsonDict], extra: Iterable[Mapping[str, Any]]) -> None:
    for item in extra:
        if not any(same_toleration(item, have) for have in into):
            into.append(dict(item))


def _merge_map(
    pod_set: str,
    field_name: str,
    into: dict[str, str],
    extra: Mapping[str, str],
    by: str,
    where: str,
) -> None:
    for key, value in extra.items():
        have = into.get(key)
        if have is not None and have != value:
            raise PodSetConflict(pod_set, field_name, key, have, value, by, where)
    into.update(extra)


def merge_info(into: PodSetInfo, extra: PodSetInfo, *, by: str, where: str = "") -> None:
    """Add `extra`'s fields to `into`.

    For errors, `by` names the source of `extra` and `where` (e.g. " in the pod template")
    the source of `into`.
    """
    for field_name, have, more in (
        ("labels", into.labels, extra.labels),
        ("annotations", into.annotations, extra.annotations),
        ("nodeSelector", into.node_selector, extra.node_selector),
    ):
        _merge_map(into.name, field_name, have, more, by, where)
    _append_missing(into.tolerations, extra.tolerations)
    _append_missing(into.scheduling_gates, extra.scheduling_gates)


def info_from_assignment(
    assignment: PodSetAssignment, pod_set: PodSet, flavors: Mapping[str, ResourceFlavor]
) -> PodSetInfo:
    """Node labels and tolerations of the flavors a pod set was admitted with.

    The count is the admitted one (fewer than the pod set's under partial admission).
    Flavors are visited by name, so the toleration order never depends on dict order.
    """
    info = PodSetInfo(
        name=assignment.name,
        count=pod_set.count if assignment.count is None else assignment.count,
    )
    for flavor_name in sorted(set(assignment.flavors.values())):
        flavor = flavors.get(flavor_name)
        if flavor is None:
            raise MissingFlavor(flavor_name)
        merge_info(
            info,
            PodSetInfo(
                name=info.name,
                count=info.count,
                node_selector=dict(flavor.spec.node_labels),
                tolerations=_json_list(flavor.spec.tolerations),
            ),
            by=f'ResourceFlavor "{flavor_name}"',
        )
    return info


def info_from_update(update: PodSetUpdate) -> PodSetInfo:
    """What an admission check asks for on a pod set."""
    return PodSetInfo(
        name=update.name,
        count=0,
        labels=dict(update.labels),
        annotations=dict(update.annotations),
        node_selector=dict(update.node_selector),
        tolerations=_json_list(update.tolerations),
    )


def _get(template: Mapping[str, Any], where: Sequence[str]) -> Any:
    section = template.get(where[0])
    return section.get(where[1]) if isinstance(section, Mapping) else None


def info_from_pod_set(pod_set: PodSet) -> PodSetInfo:
    """The scheduling fields a Workload recorded for a pod set, to restore them on stop."""
    template = pod_set.template
    return PodSetInfo(
        name=pod_set.name,
        count=pod_set.count,
        labels=dict(_get(template, _LABELS) or {}),
        annotations=dict(_get(template, _ANNOTATIONS) or {}),
        node_selector=dict(_get(template, _NODE_SELECTOR) or {}),
        tolerations=[dict(t) for t in _get(template, _TOLERATIONS) or ()],
        scheduling_gates=[dict(g) for g in _get(template, _SCHEDULING_GATES) or ()],
    )


def _set(template: JsonDict, where: Sequence[str], value: Any) -> None:
    """Set a field, or drop it when the value is empty (Go leaves empty fields out)."""
    section = template.get(where[0])
    if not value:
        if isinstance(section, dict):
            section.pop(where[1], None)
        return
    if not isinstance(section, dict):
        section = template[where[0]] = {}
    section[where[1]] = value


def merge_into_template(template: Mapping[str, Any], info: PodSetInfo) -> JsonDict:
    """A copy of `template` with `info` merged in; raises PodSetConflict on a clash."""
    current = PodSetInfo(
        name=info.name,
        count=info.count,
        labels=dict(_get(template, _LABELS) or {}),
        annotations=dict(_get(template, _ANNOTATIONS) or {}),
        node_selector=dict(_get(template, _NODE_SELECTOR) or {}),
        tolerations=[dict(t) for t in _get(template, _TOLERATIONS) or ()],
        scheduling_gates=[dict(g) for g in _get(template, _SCHEDULING_GATES) or ()],
    )
    merge_info(
        current,
        info,
        by="the admission (its flavors or admission checks)",
        where=" in the job's pod template",
    )
    result: JsonDict = copy.deepcopy(dict(template))
    for where, value in (
        (_LABELS, current.labels),
        (_ANNOTATIONS, current.annotations),
        (_NODE_SELECTOR, current.node_selector),
        (_TOLERATIONS, current.tolerations),
        (_SCHEDULING_GATES, current.scheduling_gates),
    ):
        if value != (_get(template, where) or type(value)()):
            _set(result, where, value)
    return result


def restore_template(
    template: Mapping[str, Any],
    recorded: Mapping[str, Any],
    *,
    keep_labels: Iterable[str] = (),
) -> JsonDict:
    """A copy of `template` whose scheduling fields are those of the `recorded` template.

    `keep_labels` names labels whose current value survives (for example the labels the
    Job controller adds to every pod template, which the recorded copy leaves out).
    A field already equal to the recorded one is left exactly as it is.
    """
    result: JsonDict = copy.deepcopy(dict(template))
    for where in RESTORED_FIELDS:
        wanted = copy.deepcopy(_get(recorded, where))
        if where == _LABELS:
            current_labels = _get(template, _LABELS) or {}
            kept = {key: current_labels[key] for key in keep_labels if key in current_labels}
            if kept:
                wanted = {**(wanted or {}), **kept}
        if (wanted or None) == (_get(template, where) or None):
            continue
        section = result.get(where[0])
        if wanted is None:
            if isinstance(section, dict):
                section.pop(where[1], None)
            continue
        if not isinstance(section, dict):
            section = result[where[0]] = {}
        section[where[1]] = wanted
    return result


_DNS1123_LABEL: Final = re.compile(DNS1123_LABEL)


def _admitted_extras(
    workload: Workload, assignment: PodSetAssignment, pod_set: PodSet, info: PodSetInfo
) -> None:
    """The labels, annotations and gates Kueue itself puts on admitted pods."""
    info.labels[POD_SET_LABEL] = assignment.name
    info.labels[LOCAL_QUEUE_LABEL] = workload.spec.queue_name
    cluster_queue = workload.status.admission.cluster_queue if workload.status.admission else ""
    # A label value must be short and plain; a longer ClusterQueue name is simply not shown.
    if len(cluster_queue) <= 63 and _DNS1123_LABEL.match(cluster_queue):
        info.labels[CLUSTER_QUEUE_LABEL] = cluster_queue
    info.annotations[WORKLOAD_ANNOTATION] = workload.metadata.name
    if assignment.topology_assignment is not None:
        request = pod_set.topology_request
        if request is None or (
            request.required is None and request.preferred is None and request.unconstrained is None
        ):
            info.annotations[POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
        info.scheduling_gates.append({"name": TOPOLOGY_SCHEDULING_GATE})


def infos_from_admission(
    workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> list[PodSetInfo]:
    """Everything to merge into each pod set's template when the Workload is admitted.

    One entry per podSetAssignment, in the Workload's pod set order: the flavors' node
    labels and tolerations, Kueue's own pod labels, and each admission check's
    podSetUpdates. Raises MissingFlavor, or InvalidPodSetInfo when sources disagree.
    """
    admission = workload.status.admission
    if admission is None:
        return []
    pod_sets = {pod_set.name: pod_set for pod_set in workload.spec.pod_sets}
    infos: list[PodSetInfo] = []
    for assignment in admission.pod_set_assignments:
        pod_set = pod_sets.get(assignment.name)
        if pod_set is None:
            raise InvalidPodSetInfo(
                f'admission names pod set "{assignment.name}", which the Workload does not have'
            )
        info = info_from_assignment(assignment, pod_set, flavors)
        _admitted_extras(workload, assignment, pod_set, info)
        for check in workload.status.admission_checks:
            for update in check.pod_set_updates:
                if update.name == info.name:
                    merge_info(info, info_from_update(update), by=f'admission check "{check.name}"')
                    break
        infos.append(info)
    return infos
