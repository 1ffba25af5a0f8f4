"""Where a Workload stands, in one word, and where it was sent — read from its status alone.

The phase follows the conditions upstream Kueue writes, most decisive first: Finished, then
Inactive (spec.active=false: someone stopped it), Evicted, Admitted, QuotaReserved, else
Pending. Upstream clears Evicted when quota is reserved again, so an Evicted workload
without a reservation is one waiting to be readmitted.
"""

from __future__ import annotations

import enum

from core.api.meta import Condition, ConditionStatus
from core.api.workload import Workload
from core.api.workload_conditions import WorkloadConditionType


class WorkloadPhase(enum.StrEnum):
    """The values of `fleetq list workloads --status` and of its STATUS column."""

    PENDING = "pending"
    QUOTA_RESERVED = "quotareserved"
    ADMITTED = "admitted"
    EVICTED = "evicted"
    INACTIVE = "inactive"
    FINISHED = "finished"


def condition(workload: Workload, kind: WorkloadConditionType) -> Condition | None:
    for found in workload.status.conditions:
        if found.type == kind:
            return found
    return None


def is_true(workload: Workload, kind: WorkloadConditionType) -> bool:
    found = condition(workload, kind)
    return found is not None and found.status is ConditionStatus.TRUE


def workload_phase(workload: Workload) -> WorkloadPhase:
    if is_true(workload, WorkloadConditionType.FINISHED):
        return WorkloadPhase.FINISHED
    if workload.spec.active is False:
        return WorkloadPhase.INACTIVE
    if is_true(workload, WorkloadConditionType.EVICTED):
        return WorkloadPhase.EVICTED
    if is_true(workload, WorkloadConditionType.ADMITTED):
        return WorkloadPhase.ADMITTED
    if is_true(workload, WorkloadConditionType.QUOTA_RESERVED):
        return WorkloadPhase.QUOTA_RESERVED
    return WorkloadPhase.PENDING


def is_queued(workload: Workload) -> bool:
    """Waiting in its ClusterQueue: active, unfinished, without a quota reservation."""
    return (
        workload.spec.active is not False
        and not is_true(workload, WorkloadConditionType.FINISHED)
        and not is_true(workload, WorkloadConditionType.QUOTA_RESERVED)
    )


def dispatched_to(workload: Workload) -> str:
    """The worker running it (status.clusterName), else the nominated ones, else ''."""
    if workload.status.cluster_name:
        return workload.status.cluster_name
    nominated = workload.status.nominated_cluster_names
    return f"nominated: {', '.join(nominated)}" if nominated else ""


def cluster_queue_of(workload: Workload, local_queues: dict[tuple[str, str], str]) -> str:
    """The ClusterQueue holding its reservation, else the one its LocalQueue points to."""
    if workload.status.admission is not None:
        return workload.status.admission.cluster_queue
    return local_queues.get((workload.metadata.namespace, workload.spec.queue_name), "")
