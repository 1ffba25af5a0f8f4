"""Reading a Pod kept as a plain dict, and the names upstream's Pod integration uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, annotations_of, labels_of, spec, status
from integrations.framework.labels import (
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_ADMISSION_GATE,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
)

POD_VERSION: Final = "v1"
POD_KIND: Final = "Pod"

ADMISSION_GATE: Final = POD_ADMISSION_GATE
MANAGED_VALUE: Final = MANAGED_LABEL_VALUE
POD_FINALIZER: Final = MANAGED_LABEL
"""The finalizer the webhook puts on a queued Pod (upstream spells it as the label)."""
SUSPENDED_BY_PARENT_ANNOTATION: Final = POD_SUSPENDING_PARENT_ANNOTATION
GROUP_NAME_LABEL: Final = POD_GROUP_NAME_LABEL
GROUP_NAME_ANNOTATION: Final = POD_GROUP_NAME_LABEL
"""The group name as an annotation of the same key: upstream reads it before the label
since v0.18 (gate WorkloadIdentifierAnnotations, on by default)."""
GROUP_TOTAL_COUNT_ANNOTATION: Final = POD_GROUP_TOTAL_COUNT_ANNOTATION
RETRIABLE_IN_GROUP_ANNOTATION: Final = "kueue.x-k8s.io/retriable-in-group"
TERMINATION_TARGET_CONDITION: Final = "TerminationTarget"
"""The pod condition a stop writes before deleting the Pod, saying why it goes."""
DEFAULT_POD_SET_NAME: Final = "main"

SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"


def scheduling_gates(pod: Job) -> list[Mapping[str, Any]]:
    return [g for g in spec(pod).get("schedulingGates") or () if isinstance(g, Mapping)]


def has_gate(pod: Job, name: str = ADMISSION_GATE) -> bool:
    return any(gate.get("name") == name for gate in scheduling_gates(pod))


def phase(pod: Job) -> str:
    return str(status(pod).get("phase") or "")


def is_terminated(pod: Job) -> bool:
    """Succeeded or Failed: no container of it runs again."""
    return phase(pod) in (SUCCEEDED, FAILED)


def is_managed(pod: Job) -> bool:
    return labels_of(pod).get(MANAGED_LABEL) == MANAGED_VALUE


def group_name(pod: Job) -> str:
    """The pod group's name: the annotation, else the label (upstream's GetPodGroupName)."""
    named = annotations_of(pod).get(GROUP_NAME_ANNOTATION) or labels_of(pod).get(GROUP_NAME_LABEL)
    return str(named or "")


def suspended_by_parent(pod: Job) -> bool:
    return SUSPENDED_BY_PARENT_ANNOTATION in annotations_of(pod)


def condition_true(pod: Job, kind: str) -> bool:
    for condition in status(pod).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def is_deleting(pod: Job) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_runnable_or_succeeded(pod: Job) -> bool:
    """Can still run, runs or succeeded (upstream's isPodRunnableOrSucceeded): not Failed,
    and not deleted before it was placed on a node (a deleted Pod on a node still counts
    until its kubelet stops it)."""
    if is_deleting(pod) and not spec(pod).get("nodeName"):
        return False
    return phase(pod) != FAILED


def has_finalizer(pod: Job) -> bool:
    return POD_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())
