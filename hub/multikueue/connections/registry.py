"""WorkerRegistry: the hub's view of its workers, for MultiKueue dispatch and status sync.

It answers the questions dispatch asks on every pass, all from caches: which workers does
this AdmissionCheck (through its MultiKueueConfig or MultiKueueClusterSet) list, in
config order; is each one connected; what do its caches hold. And it fans out change
notifications (a worker connected or was lost, a remote object or capacity report changed,
a config's or set's cluster list changed) to whoever subscribed, so dispatch reacts to
changes instead of polling. Listeners must be quick (enqueue, no I/O); one that raises
is logged and skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME
from core.kube.informer import Informer
from hub.multikueue.connections.cluster_list_reference import (
    ClusterListRef,
    cluster_list_reference,
)
from hub.multikueue.connections.cluster_lists import ClusterLists
from hub.multikueue.connections.remote_caches import RemoteCaches
from hub.multikueue.connections.worker_connection import WorkerConnection
from hub.multikueue.connections.worker_events import ConfigChanged, WorkerEvent, WorkerListener


@dataclass(frozen=True, slots=True)
class WorkerView:
    """One worker a config lists; `connection` is None when no such cluster is served."""

    name: str
    connection: WorkerConnection | None

    @property
    def connected(self) -> bool:
        return self.connection is not None and self.connection.connected

    @property
    def caches(self) -> RemoteCaches | None:
        return None if self.connection is None else self.connection.caches


class WorkerRegistry:
    """Workers by name, configs and checks by reference, and the change fan-out."""

    def __init__(self, checks: Informer[AdmissionCheck], lists: ClusterLists) -> None:
        self._checks = checks
        self._lists = lists
        self._connections: dict[str, WorkerConnection] = {}
        self._listeners: list[WorkerListener] = []
        self.log = structlog.get_logger("hub.multikueue")
        lists.subscribe(lambda ref: self.publish(ConfigChanged(ref.name, ref.kind)))

    # -- notifications ---------------------------------------------------------------

    def subscribe(self, listener: WorkerListener) -> Callable[[], None]:
        """Call `listener` on every change; the returned function unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self, event: WorkerEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                self.log.exception("multikueue.listener_failed", event=type(event).__name__)

    # -- connections (kept by the cluster controller) --------------------------------

    def attach(self, connection: WorkerConnection) -> None:
        self._connections[connection.name] = connection

    def detach(self, name: str) -> WorkerConnection | None:
        return self._connections.pop(name, None)

    def connection(self, name: str) -> WorkerConnection | None:
        return self._connections.get(name)

    def connections(self) -> list[WorkerConnection]:
        return [self._connections[name] for name in sorted(self._connections)]

    # -- what a check or config lists ------------------------------------------------

    def is_multikueue_check(self, check_name: str) -> bool:
        check = self._checks.store.get(check_name)
        return check is not None and check.spec.controller_name == MULTIKUEUE_CONTROLLER_NAME

    def cluster_list_for_check(self, check_name: str) -> ClusterListRef | None:
        """The config or set a MultiKueue check's parameters name (None if not valid)."""
        check = self._checks.store.get(check_name)
        if check is None or check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME:
            return None
        return cluster_list_reference(check)

    def workers_for_check(self, check_name: str) -> list[WorkerView]:
        """The workers a MultiKueue AdmissionCheck dispatches to, in config order."""
        ref = self.cluster_list_for_check(check_name)
        if ref is None:
            return []
        return [
            WorkerView(name, self._connections.get(name)) for name in self._lists.clusters_of(ref)
        ]

    def connected_workers_for_check(self, check_name: str) -> list[WorkerView]:
        return [view for view in self.workers_for_check(check_name) if view.connected]
