"""Which priority a job's Workload gets, and from which class, as upstream decides it.

In order: the job's `kueue.x-k8s.io/priority-class` label names a WorkloadPriorityClass;
otherwise the pods' `priorityClassName` names a scheduling.k8s.io PriorityClass; otherwise
the cluster's global-default PriorityClass applies (the lowest, if several claim it);
otherwise the priority is 0 with no class. A named class that does not exist is an error
the caller retries on, as upstream does: the Workload is not created with a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from core.api.workload import PriorityClassGroup, PriorityClassKind, PriorityClassRef

__all__ = [
    "DEFAULT_PRIORITY",
    "MissingPriorityClass",
    "PodPriorityClass",
    "PriorityClasses",
    "ResolvedPriority",
    "resolve_priority",
]

DEFAULT_PRIORITY: Final = 0


@dataclass(frozen=True, slots=True)
class PodPriorityClass:
    """The parts of a scheduling.k8s.io/v1 PriorityClass that set a Workload's priority."""

    value: int
    global_default: bool = False


@dataclass(frozen=True, slots=True)
class PriorityClasses:
    """The classes the caller's cache knows, by name."""

    workload_classes: Mapping[str, int] = field(default_factory=dict)
    """WorkloadPriorityClass name → value."""
    pod_classes: Mapping[str, PodPriorityClass] = field(default_factory=dict)
    """PriorityClass name → value and globalDefault."""


@dataclass(frozen=True, slots=True)
class ResolvedPriority:
    """spec.priorityClassRef and spec.priority of a Workload."""

    class_ref: PriorityClassRef | None
    priority: int


class MissingPriorityClass(LookupError):
    """The job names a priority class that does not exist (yet)."""

    def __init__(self, kind: PriorityClassKind, name: str):
        self.kind, self.name = kind, name
        super().__init__(f'{kind} "{name}" not found; create it or fix the name on the job')


def _workload_class_ref(name: str) -> PriorityClassRef:
    return PriorityClassRef(
        group=PriorityClassGroup.KUEUE, kind=PriorityClassKind.WORKLOAD_PRIORITY_CLASS, name=name
    )


def _pod_class_ref(name: str) -> PriorityClassRef:
    return PriorityClassRef(
        group=PriorityClassGroup.SCHEDULING, kind=PriorityClassKind.PRIORITY_CLASS, name=name
    )


def resolve_priority(
    *, workload_class_name: str, pod_class_name: str, classes: PriorityClasses
) -> ResolvedPriority:
    """The priority for a job with these class names ('' when the job names none)."""
    if workload_class_name:
        value = classes.workload_classes.get(workload_class_name)
        if value is None:
            raise MissingPriorityClass(
                PriorityClassKind.WORKLOAD_PRIORITY_CLASS, workload_class_name
            )
        return ResolvedPriority(_workload_class_ref(workload_class_name), value)
    if pod_class_name:
        pod_class = classes.pod_classes.get(pod_class_name)
        if pod_class is None:
            raise MissingPriorityClass(PriorityClassKind.PRIORITY_CLASS, pod_class_name)
        return ResolvedPriority(_pod_class_ref(pod_class_name), pod_class.value)
    defaults = [
        (pod_class.value, name)
        for name, pod_class in classes.pod_classes.items()
        if pod_class.global_default
    ]
    if defaults:
        value, name = min(defaults)
        return ResolvedPriority(_pod_class_ref(name), value)
    return ResolvedPriority(None, DEFAULT_PRIORITY)
