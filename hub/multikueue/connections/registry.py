"""WorkerRegistry: the hub's view of its workers, for MultiKueue dispatch and status sync.

It answers the questions dispatch asks on every pass, all from caches: which workers does
this AdmissionCheck (through its MultiKueueConfig) list, in config order; is each one
connected; what do its caches hold. And it fans out change notifications (a worker
connected or was lost, a remote object or capacity report changed, a config's cluster
list changed) to whoever subscribed, so dispatch reacts to changes instead of polling.
Listeners must be quick (enqueue, no I/O); one that raises is logged and skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.groups import KUEUE_GROUP
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME, MultiKueueConfig
from core.kube.informer import EventHandlers, Informer
from hub.multikueue.connections.remote_caches import RemoteCaches
from hub.multikueue.connections.worker_connection import WorkerConnection
from hub.multikueue.connections.worker_events import ConfigChanged, WorkerEvent, WorkerListener

MULTIKUEUE_CONFIG_KIND = "MultiKueueConfig"


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

    def __init__(
        self, checks: Informer[AdmissionCheck], configs: Informer[MultiKueueConfig]
    ) -> None:
        self._checks = checks
        self._configs = configs
        self._connections: dict[str, WorkerConnection] = {}
        self._listeners: list[WorkerListener] = []
        self.log = structlog.get_logger("hub.multikueue")
        configs.add_handlers(
            EventHandlers(
                on_add=self._config_changed,
                on_update=self._config_updated,
                on_delete=self._config_changed,
            )
        )

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

    def config_name_for_check(self, check_name: str) -> str | None:
        """The MultiKueueConfig a MultiKueue check's parameters name (None if not valid)."""
        check = self._checks.store.get(check_name)
        if check is None or check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME:
            return None
        return config_reference(check)

    def clusters_of_config(self, config_name: str) -> list[str]:
        """The config's cluster names in its order ([] when it does not exist)."""
        config = self._configs.store.get(config_name)
        return [] if config is None else list(config.spec.clusters)

    def workers_for_config(self, config_name: str) -> list[WorkerView]:
        return [
            WorkerView(name, self._connections.get(name))
            for name in self.clusters_of_config(config_name)
        ]

    def workers_for_check(self, check_name: str) -> list[WorkerView]:
        """The workers a MultiKueue AdmissionCheck dispatches to, in config order."""
        config_name = self.config_name_for_check(check_name)
        return [] if config_name is None else self.workers_for_config(config_name)

    def connected_workers_for_check(self, check_name: str) -> list[WorkerView]:
        return [view for view in self.workers_for_check(check_name) if view.connected]

    def _config_changed(self, config: MultiKueueConfig) -> None:
        self.publish(ConfigChanged(config.metadata.name))

    def _config_updated(self, old: MultiKueueConfig, new: MultiKueueConfig) -> None:
        if old.spec.clusters != new.spec.clusters:
            self._config_changed(new)


def config_reference(check: AdmissionCheck) -> str | None:
    """The name of the MultiKueueConfig a check's parameters point at, if they do."""
    ref = check.spec.parameters
    if ref is None or not ref.name:
        return None
    if ref.api_group != KUEUE_GROUP or ref.kind != MULTIKUEUE_CONFIG_KIND:
        return None
    return ref.name
