"""Pure builders of the pending-workloads answers for a ClusterQueue and a LocalQueue.

Semantics follow upstream's visibility storage: the source lists every pending workload
of the queue in order with both positions filled in, and the answer is the window
`[offset, offset + limit)` of that list, so positions stay absolute whatever the window.
Failures come back as a `Status` (404 for an unknown queue), never as exceptions, so the
server only has to encode what it gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from core.api.kube_time import format_time
from core.engine.model import PendingWorkload
from hub.visibility.group import PREFERRED_VERSION, QueueResource, VisibilityVersion
from hub.visibility.query import PendingWorkloadOptions
from hub.visibility.source import PendingWorkloadsSource
from hub.visibility.status import Status, queue_not_found
from hub.visibility.summary_types import (
    OwnerRef,
    PendingWorkloadItem,
    PendingWorkloadMeta,
    PendingWorkloadsSummary,
)


def creation_timestamp(seconds: float) -> str:
    """RFC 3339 at second precision, as metadata.creationTimestamp; "" (omitted) if unset.

    The engine records a missing creationTimestamp as 0.0, so 0 means "unknown".
    """
    if seconds <= 0:
        return ""
    return format_time(datetime.fromtimestamp(int(seconds), UTC))


def pending_workload_item(
    pending: PendingWorkload, source: PendingWorkloadsSource
) -> PendingWorkloadItem:
    owners = tuple(
        OwnerRef(api_version=ref.api_version, kind=ref.kind, name=ref.name, uid=ref.uid)
        for ref in source.owner_references(pending.namespace, pending.name)
    )
    return PendingWorkloadItem(
        metadata=PendingWorkloadMeta(
            name=pending.name,
            namespace=pending.namespace,
            creation_timestamp=creation_timestamp(pending.creation_time),
            owner_references=owners,
        ),
        priority=pending.priority,
        local_queue_name=pending.local_queue,
        position_in_cluster_queue=pending.position_in_cluster_queue,
        position_in_local_queue=pending.position_in_local_queue,
    )


def _window(
    pending: Sequence[PendingWorkload],
    options: PendingWorkloadOptions,
    source: PendingWorkloadsSource,
    version: VisibilityVersion,
) -> PendingWorkloadsSummary:
    chosen = pending[options.offset : options.offset + options.limit]
    return PendingWorkloadsSummary(
        api_version=version.group_version,
        items=[pending_workload_item(p, source) for p in chosen],
    )


def cluster_queue_summary(
    source: PendingWorkloadsSource,
    name: str,
    options: PendingWorkloadOptions | None = None,
    version: VisibilityVersion = PREFERRED_VERSION,
) -> PendingWorkloadsSummary | Status:
    """Pending workloads of ClusterQueue `name`, or a 404 Status if it does not exist."""
    if not source.cluster_queue_exists(name):
        return queue_not_found(QueueResource.CLUSTER_QUEUE, name)
    options = options or PendingWorkloadOptions()
    return _window(source.pending_workloads(name), options, source, version)


def local_queue_summary(
    source: PendingWorkloadsSource,
    namespace: str,
    name: str,
    options: PendingWorkloadOptions | None = None,
    version: VisibilityVersion = PREFERRED_VERSION,
) -> PendingWorkloadsSummary | Status:
    """Pending workloads of LocalQueue `namespace/name`, or a 404 Status if it is unknown.

    A LocalQueue whose ClusterQueue is missing exists, and simply has nothing pending in
    order (upstream answers the same).
    """
    if not source.local_queue_exists(namespace, name):
        return queue_not_found(QueueResource.LOCAL_QUEUE, name)
    options = options or PendingWorkloadOptions()
    pending = source.pending_workloads_in_local_queue(namespace, name)
    return _window(pending, options, source, version)
