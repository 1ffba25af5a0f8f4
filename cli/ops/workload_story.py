"""The story of one Workload, told from its status: created, queued (and why), admitted
(where, with which flavors), dispatched to which worker, evicted (why), finished (how).

Every step comes from a condition, an admission check or a status field the hub (or
upstream Kueue) wrote, with the time it was written; nothing is inferred that the API does
not say. Steps are told in time order.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from cli.ops.queue_positions import QueuePosition
from cli.ops.workload_phase import (
    WorkloadPhase,
    cluster_queue_of,
    condition,
    dispatched_to,
    workload_phase,
)
from cli.ops.workload_topology import PodSetTopologyView, topology_views, unhealthy_node_names
from core.api.meta import ConditionStatus
from core.api.workload import Workload
from core.api.workload_conditions import WorkloadConditionType as Cond


class StoryStep(msgspec.Struct, kw_only=True, rename="camel"):
    time: datetime | None
    step: str
    detail: str = ""


class PositionView(msgspec.Struct, kw_only=True, rename="camel"):
    cluster_queue: int
    local_queue: int
    source: str


class JobView(msgspec.Struct, kw_only=True, rename="camel"):
    kind: str
    name: str
    found: bool
    suspended: bool | None = None
    active: int = 0
    succeeded: int = 0
    failed: int = 0


class EventView(msgspec.Struct, kw_only=True, rename="camel"):
    time: str
    type: str
    reason: str
    object: str
    message: str
    count: int = 1


class WorkloadStory(msgspec.Struct, kw_only=True, rename="camel"):
    namespace: str
    name: str
    status: WorkloadPhase
    local_queue: str
    cluster_queue: str
    priority: int
    worker: str
    position: PositionView | None
    pending_reason: str
    """Why it waits: the last QuotaReserved=False message (empty once reserved)."""
    steps: list[StoryStep]
    job: JobView | None = None
    events: list[EventView] = []
    topology: list[PodSetTopologyView] = []
    """Where topology-aware scheduling placed each pod set (domains and pod counts)."""
    unhealthy_nodes: list[str] = []


def tell_story(
    workload: Workload, local_queues: dict[tuple[str, str], str], position: QueuePosition | None
) -> WorkloadStory:
    return WorkloadStory(
        namespace=workload.metadata.namespace,
        name=workload.metadata.name,
        status=workload_phase(workload),
        local_queue=workload.spec.queue_name,
        cluster_queue=cluster_queue_of(workload, local_queues),
        priority=workload.spec.priority or 0,
        worker=dispatched_to(workload),
        position=PositionView(
            cluster_queue=position.in_cluster_queue,
            local_queue=position.in_local_queue,
            source=position.source.value,
        )
        if position
        else None,
        pending_reason=pending_reason(workload),
        steps=story_steps(workload, local_queues),
        topology=topology_views(workload),
        unhealthy_nodes=unhealthy_node_names(workload),
    )


def pending_reason(workload: Workload) -> str:
    reserved = condition(workload, Cond.QUOTA_RESERVED)
    if reserved is None:
        if workload_phase(workload) is WorkloadPhase.PENDING:
            return "not yet considered by the scheduler"
        return ""
    if reserved.status is ConditionStatus.TRUE:
        return ""
    return reserved.message or reserved.reason


def story_steps(workload: Workload, local_queues: dict[tuple[str, str], str]) -> list[StoryStep]:
    meta, status = workload.metadata, workload.status
    queue = cluster_queue_of(workload, local_queues) or "?"
    steps = [
        StoryStep(
            time=meta.creation_timestamp,
            step="Created",
            detail=f"in LocalQueue {workload.spec.queue_name or '-'} (ClusterQueue {queue}), "
            f"priority {workload.spec.priority or 0}",
        )
    ]
    reserved = condition(workload, Cond.QUOTA_RESERVED)
    if reserved is not None and reserved.status is ConditionStatus.TRUE:
        steps.append(
            StoryStep(
                time=reserved.last_transition_time,
                step="QuotaReserved",
                detail=f"in ClusterQueue {queue}; {flavor_text(workload)}",
            )
        )
    elif reserved is not None:
        steps.append(
            StoryStep(
                time=reserved.last_transition_time,
                step="Queued",
                detail=f"{reserved.reason}: {reserved.message}"
                if reserved.message
                else reserved.reason,
            )
        )
    for check in status.admission_checks:
        detail = f"{check.state.value}: {check.message}" if check.message else check.state.value
        steps.append(
            StoryStep(time=check.last_transition_time, step=f"Check {check.name}", detail=detail)
        )
    admitted = condition(workload, Cond.ADMITTED)
    if admitted is not None and admitted.status is ConditionStatus.TRUE:
        steps.append(
            StoryStep(time=admitted.last_transition_time, step="Admitted", detail=admitted.message)
        )
    if status.cluster_name:
        when = admitted.last_transition_time if admitted is not None else None
        steps.append(
            StoryStep(time=when, step="Dispatched", detail=f"to worker {status.cluster_name}")
        )
    elif status.nominated_cluster_names:
        steps.append(
            StoryStep(
                time=None,
                step="Nominated",
                detail="workers " + ", ".join(status.nominated_cluster_names),
            )
        )
    for kind in (Cond.PODS_READY, Cond.EVICTED, Cond.PREEMPTED, Cond.REQUEUED, Cond.FINISHED):
        found = condition(workload, kind)
        if found is None or (
            kind is not Cond.PODS_READY and found.status is not ConditionStatus.TRUE
        ):
            continue
        detail = f"{found.reason}: {found.message}" if found.message else found.reason
        if kind is Cond.PODS_READY and found.status is not ConditionStatus.TRUE:
            steps.append(
                StoryStep(time=found.last_transition_time, step="PodsNotReady", detail=detail)
            )
        else:
            steps.append(StoryStep(time=found.last_transition_time, step=str(kind), detail=detail))
    if workload.spec.active is False:
        steps.append(StoryStep(time=None, step="Inactive", detail="spec.active is false (stopped)"))
    if status.scheduling_stats is not None:
        for eviction in status.scheduling_stats.evictions:
            cause = f" ({eviction.underlying_cause})" if eviction.underlying_cause else ""
            steps.append(
                StoryStep(
                    time=None,
                    step="EvictionCount",
                    detail=f"{eviction.count}x {eviction.reason}{cause}",
                )
            )
    return sorted(steps, key=_step_order)


def _step_order(step: StoryStep) -> tuple[int, float]:
    """Timed steps by time; untimed ones (counts, nominations) last, in their given order."""
    return (0, step.time.timestamp()) if step.time else (1, 0.0)


def flavor_text(workload: Workload) -> str:
    admission = workload.status.admission
    if admission is None:
        return "no flavors recorded"
    parts = []
    for assignment in admission.pod_set_assignments:
        flavors = ", ".join(f"{res}={flavor}" for res, flavor in sorted(assignment.flavors.items()))
        parts.append(f"{assignment.name}: {flavors or '-'}")
    return "flavors " + "; ".join(parts)
