"""Where each pending workload stands in its queues (0 = next), and where that came from.

The hub's visibility API (`visibility.kueue.x-k8s.io`) knows the engine's queues exactly and
is asked first. When it is not served (no hub running, APIService missing or unavailable)
the positions are computed from the Workloads with the engine's own order — higher
priority first, then earlier queue-order time, then UID — where the queue-order time is
the creation time, or the eviction time for a workload evicted by a PodsReady timeout or an
admission check (upstream's default `Eviction` requeuing timestamp). A computed position
cannot know the workload the engine keeps at the head while it preempts, so each answer
says its source.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cli.join.cluster_rest import ClusterCallError, ClusterRest
from cli.ops.workload_phase import cluster_queue_of, condition, is_queued
from core.api.meta import ConditionStatus
from core.api.workload import Workload
from core.api.workload_conditions import WorkloadConditionType, WorkloadReason

VISIBILITY_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{}/pendingworkloads"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REQUEUE_AT_EVICTION = frozenset(
    {WorkloadReason.PODS_READY_TIMEOUT, WorkloadReason.ADMISSION_CHECK}
)


class PositionSource(enum.StrEnum):
    VISIBILITY = "visibility"
    """Reported by the hub's visibility API."""
    COMPUTED = "computed"
    """Computed by the CLI from the Workloads, in the engine's order."""


@dataclass(frozen=True, slots=True)
class QueuePosition:
    cluster_queue: str
    in_cluster_queue: int
    in_local_queue: int
    source: PositionSource


WorkloadKey = tuple[str, str]
"""(namespace, name)."""


def queue_order_time(workload: Workload) -> datetime:
    evicted = condition(workload, WorkloadConditionType.EVICTED)
    if (
        evicted is not None
        and evicted.status is ConditionStatus.TRUE
        and evicted.reason in _REQUEUE_AT_EVICTION
    ):
        return evicted.last_transition_time
    return workload.metadata.creation_timestamp or _EPOCH


def queue_order_key(workload: Workload) -> tuple[int, datetime, str]:
    """The engine's heap order (see core.engine.pending_queue)."""
    return (-(workload.spec.priority or 0), queue_order_time(workload), workload.metadata.uid)


def computed_positions(
    workloads: Iterable[Workload], local_queues: dict[WorkloadKey, str]
) -> dict[WorkloadKey, QueuePosition]:
    """Positions of every queued workload whose LocalQueue leads to a ClusterQueue."""
    by_queue: dict[str, list[Workload]] = {}
    for workload in workloads:
        queue = cluster_queue_of(workload, local_queues)
        if queue and is_queued(workload):
            by_queue.setdefault(queue, []).append(workload)
    positions: dict[WorkloadKey, QueuePosition] = {}
    for queue, members in by_queue.items():
        in_local: dict[WorkloadKey, int] = {}
        for index, workload in enumerate(sorted(members, key=queue_order_key)):
            local = (workload.metadata.namespace, workload.spec.queue_name)
            local_index = in_local.get(local, 0)
            in_local[local] = local_index + 1
            key = (workload.metadata.namespace, workload.metadata.name)
            positions[key] = QueuePosition(queue, index, local_index, PositionSource.COMPUTED)
    return positions


def visibility_positions(
    manager: ClusterRest, cluster_queues: Iterable[str]
) -> dict[WorkloadKey, QueuePosition] | None:
    """Positions from the hub's visibility API; None when it does not answer for every queue."""
    positions: dict[WorkloadKey, QueuePosition] = {}
    for queue in sorted(set(cluster_queues)):
        try:
            answer = manager.request("GET", VISIBILITY_PATH.format(queue))
        except ClusterCallError:
            return None
        positions.update(positions_from_summary(queue, answer))
    return positions


def positions_from_summary(
    cluster_queue: str, summary: Mapping[str, Any]
) -> dict[WorkloadKey, QueuePosition]:
    """The positions in one `PendingWorkloadsSummary` answer."""
    positions: dict[WorkloadKey, QueuePosition] = {}
    for item in summary.get("items") or []:
        meta = item.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        positions[key] = QueuePosition(
            cluster_queue,
            int(item.get("positionInClusterQueue", 0)),
            int(item.get("positionInLocalQueue", 0)),
            PositionSource.VISIBILITY,
        )
    return positions


def queue_positions(
    manager: ClusterRest,
    workloads: list[Workload],
    local_queues: dict[WorkloadKey, str],
) -> dict[WorkloadKey, QueuePosition]:
    """Visibility API answers when the hub serves them, else computed ones."""
    computed = computed_positions(workloads, local_queues)
    queues = {position.cluster_queue for position in computed.values()}
    if not queues:
        return computed
    served = visibility_positions(manager, queues)
    return computed if served is None else served
