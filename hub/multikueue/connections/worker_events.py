"""What the connections tell the rest of the hub: workers came and went, remote things changed.

Listeners run on the event loop inside informer and connection callbacks, so they must be
quick: enqueue a key, never do I/O. Remote objects are shared with the caches; a listener
must not change them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.api.worker_capacity import WorkerCapacity


@dataclass(frozen=True, slots=True)
class WorkerConnected:
    """The worker's caches are synced: its remote objects can be read and written."""

    cluster: str


@dataclass(frozen=True, slots=True)
class WorkerDisconnected:
    """The worker is unusable: lost, misconfigured or removed.

    `since` is the first moment of this outage (kept across failed reconnects), which is
    what a worker-lost timeout counts from.
    """

    cluster: str
    since: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class RemoteObjectChanged:
    """A remote Workload or job carrying our origin label was added, changed or deleted.

    `workload_key` is the `namespace/name` of the Workload it belongs to (for a job: its
    prebuilt-workload name), which is the key MultiKueue reconciles on the hub.
    """

    cluster: str
    kind: str
    key: str
    workload_key: str | None
    object: Any
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class CapacityChanged:
    """A WorkerCapacity report on the worker changed (None: it was deleted)."""

    cluster: str
    report: WorkerCapacity | None


@dataclass(frozen=True, slots=True)
class ConfigChanged:
    """A MultiKueueConfig or MultiKueueClusterSet (`kind`) was created, deleted or changed
    its list of clusters."""

    config: str
    kind: str = "MultiKueueConfig"


WorkerEvent = (
    WorkerConnected | WorkerDisconnected | RemoteObjectChanged | CapacityChanged | ConfigChanged
)
WorkerListener = Callable[[WorkerEvent], None]
