"""The rows of `fleetq list workloads`: each Workload with its phase, queue position and worker.

Positions are computed over every namespace (a ClusterQueue is shared), so the listing reads
Workloads cluster-wide and filters afterwards; a user allowed to read only one namespace
gets positions among what they can see, and the answer says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import msgspec

from cli.join.cluster_rest import ClusterRest
from cli.ops.kueue_reads import list_objects
from cli.ops.ops_errors import ForbiddenError
from cli.ops.queue_positions import PositionSource, queue_positions
from cli.ops.workload_phase import WorkloadPhase, cluster_queue_of, dispatched_to, workload_phase
from core.api.local_queue import LocalQueue
from core.api.workload import Workload


class WorkloadRow(msgspec.Struct, kw_only=True, rename="camel"):
    namespace: str
    name: str
    local_queue: str
    cluster_queue: str
    status: WorkloadPhase
    priority: int
    position_in_cluster_queue: int | None = None
    position_in_local_queue: int | None = None
    worker: str = ""
    created: datetime | None = None
    age_seconds: int | None = None


class WorkloadListing(msgspec.Struct, kw_only=True, rename="camel"):
    items: list[WorkloadRow]
    position_source: PositionSource | None = None
    """Where the positions came from; None when nothing listed is queued."""


@dataclass(frozen=True, slots=True)
class WorkloadFilter:
    namespace: str | None = None
    cluster_queue: str | None = None
    local_queue: str | None = None
    phase: WorkloadPhase | None = None
    worker: str | None = None

    def keeps(self, row: WorkloadRow) -> bool:
        return (
            (self.namespace is None or row.namespace == self.namespace)
            and (self.cluster_queue is None or row.cluster_queue == self.cluster_queue)
            and (self.local_queue is None or row.local_queue == self.local_queue)
            and (self.phase is None or row.status is self.phase)
            and (self.worker is None or row.worker == self.worker)
        )


def local_queue_targets(local_queues: list[LocalQueue]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) → its ClusterQueue."""
    return {(lq.metadata.namespace, lq.metadata.name): lq.spec.cluster_queue for lq in local_queues}


def read_queue_state(
    manager: ClusterRest, namespace: str | None
) -> tuple[list[Workload], dict[tuple[str, str], str]]:
    """Workloads and LocalQueues cluster-wide, else (when refused) of `namespace`."""
    try:
        workloads = list_objects(manager, Workload)
        local_queues = list_objects(manager, LocalQueue)
    except ForbiddenError:
        if namespace is None:
            raise
        workloads = list_objects(manager, Workload, namespace)
        local_queues = list_objects(manager, LocalQueue, namespace)
    return workloads, local_queue_targets(local_queues)


def list_workloads(
    manager: ClusterRest, selection: WorkloadFilter, now: datetime
) -> WorkloadListing:
    workloads, targets = read_queue_state(manager, selection.namespace)
    positions = queue_positions(manager, workloads, targets)
    rows: list[WorkloadRow] = []
    sources: set[PositionSource] = set()
    for workload in workloads:
        meta = workload.metadata
        row = WorkloadRow(
            namespace=meta.namespace,
            name=meta.name,
            local_queue=workload.spec.queue_name,
            cluster_queue=cluster_queue_of(workload, targets),
            status=workload_phase(workload),
            priority=workload.spec.priority or 0,
            worker=dispatched_to(workload),
            created=meta.creation_timestamp,
            age_seconds=int((now - meta.creation_timestamp).total_seconds())
            if meta.creation_timestamp
            else None,
        )
        position = positions.get((meta.namespace, meta.name))
        if position is not None:
            row.position_in_cluster_queue = position.in_cluster_queue
            row.position_in_local_queue = position.in_local_queue
        if not selection.keeps(row):
            continue
        if position is not None:
            sources.add(position.source)
        rows.append(row)
    rows.sort(key=_row_order)
    return WorkloadListing(items=rows, position_source=min(sources) if sources else None)


def _row_order(row: WorkloadRow) -> tuple[str, int, str, str]:
    """Queued ones by queue and position first, so the table reads like the queue."""
    position = row.position_in_cluster_queue
    return (row.cluster_queue, -1 if position is None else position, row.namespace, row.name)
