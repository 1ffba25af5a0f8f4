"""Kinds queued as pod groups whose Workloads they build ahead: `PrebuildsGroupWorkloads`.

A LeaderWorkerSet is never suspended and never started: it makes groups of Pods (one
leader, `size - 1` workers) through StatefulSets, and upstream queues each group as one
Workload the LeaderWorkerSet's reconciler creates before the group's Pods exist (a
prebuilt Workload). The Pods, gated by the Pod webhook because their templates say a
parent suspends them, are then marked as a pod group naming that Workload, and the Pod
integration admits each group all together.

A StatefulSet is queued the same way as one group (its Workload prebuilt by its
reconciler, upstream v0.19.2), held rather than deleted while it is scaled to zero.

A kind of that sort implements this Protocol; the manager then runs a group-Workload
controller for it instead of the job controller (`core.manager.group_workload_controller`):
it keeps one Workload per wanted group (creating the missing, moving the queue name,
holding those of held groups, deleting those of groups no longer wanted or of a job gone)
and marks the job's Pods.
Its Pods are its referenced objects (`ReadsReferencedObjects`), so the manager watches
them. Every method is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from core.api.workload import Workload
from integrations.framework.job_metadata import Job


@dataclass(frozen=True, slots=True)
class GroupWorkloadName:
    """One wanted group's Workload: its name and the group's index. A `held` group is
    kept but wants no Pods now (a StatefulSet scaled to zero): its Workload, if any, is
    put on hold (quota released, not queued) instead of deleted, and none is created."""

    name: str
    index: int
    held: bool = False


@runtime_checkable
class PrebuildsGroupWorkloads(Protocol):
    """See the module docstring."""

    def pod_job_name(self, pod: Mapping[str, Any]) -> str | None:
        """The name of the job of this kind that made the Pod (None: not one of its)."""
        ...

    def wanted_group_workloads(self, job: Job) -> list[GroupWorkloadName]:
        """The groups the job wants queued now, in index order."""
        ...

    def creates_group_workloads(self, job: Job) -> bool:
        """False: the job's Workloads come from elsewhere (a MultiKueue worker's copy
        gets them from the manager) and are only kept, never created."""
        ...

    def group_workload(self, workload: Workload, job: Job, wanted: GroupWorkloadName) -> Workload:
        """The Workload `build_workload` made for the job (its pod sets are one group's),
        named and marked as the group's."""
        ...

    def marked_pod(self, job: Job, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Pod with the marks that make it a member of its group's pod group, or None
        when there is nothing to change (marked already, or not indexed yet)."""
        ...


def prebuilds_group_workloads(kind: object) -> PrebuildsGroupWorkloads | None:
    return kind if isinstance(kind, PrebuildsGroupWorkloads) else None
