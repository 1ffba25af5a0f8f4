"""Where changing a Workload's priority from the dashboard is written, the Kueue way.

In Kueue a Workload's priority comes from its job's `kueue.x-k8s.io/priority-class` label
(a WorkloadPriorityClass); changing that label on the job, even while it runs, is how a
user reprioritises it, and the job reconciler then points the Workload at the new class
and its value (`core.manager.job_controller.priority_class_change`). Patching the
Workload alone would be undone by that reconciler, since the job's label still names the
old class. So the dashboard writes:
- the job's label, when a job of a registered kind owns the Workload (RBAC: `patch` on
  that job);
- the Workload's `spec.priorityClassRef.name` and `spec.priority`, for a Workload no job
  owns (RBAC: `patch` on the Workload).
As upstream, only between WorkloadPriorityClasses: a priority from a pod PriorityClass, or
none, cannot be changed this way (the job would have to be created with the label).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.api.groups import KUEUE_GROUP, KUEUE_VERSION
from core.api.workload import PriorityClassKind, Workload
from hub.dashboard.workload_reads import owner_job


class PriorityNotChangeable(Exception):
    """Why this Workload's priority cannot be changed from the page (a sentence)."""


@dataclass(frozen=True, slots=True)
class PriorityTarget:
    """The object a priority change is written to."""

    group: str
    version: str
    plural: str
    kind: str
    namespace: str
    name: str
    current: str
    """The WorkloadPriorityClass the Workload has now."""

    @property
    def on_job(self) -> bool:
        return self.kind != "Workload"


def priority_target(workload: Workload) -> PriorityTarget:
    """Where to write a new WorkloadPriorityClass for `workload` (module docstring)."""
    ref = workload.spec.priority_class_ref
    meta = workload.metadata
    if ref is None or ref.kind is not PriorityClassKind.WORKLOAD_PRIORITY_CLASS:
        source = "no priority class" if ref is None else f"the pod PriorityClass {ref.name}"
        raise PriorityNotChangeable(
            f"workload {meta.namespace}/{meta.name} takes its priority from {source}; as in "
            "Kueue, only a WorkloadPriorityClass can be changed (create the job with the "
            "label kueue.x-k8s.io/priority-class)"
        )
    owner = owner_job(workload)
    if owner is None:
        return PriorityTarget(
            KUEUE_GROUP, KUEUE_VERSION, "workloads", "Workload", meta.namespace, meta.name, ref.name
        )
    kind_name, job_name, kind = owner
    if kind is None:
        raise PriorityNotChangeable(
            f"workload {meta.namespace}/{meta.name} belongs to a {kind_name} {job_name}, "
            "a kind this hub does not manage, so its label cannot be changed from here"
        )
    resource = kind.resource
    return PriorityTarget(
        resource.group,
        resource.version,
        resource.plural,
        resource.kind,
        meta.namespace,
        job_name,
        ref.name,
    )
