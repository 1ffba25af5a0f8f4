"""Reconcile MultiKueueClusters: one WorkerConnection each, and upstream's Active condition.

For each cluster key the controller reads the object and its kubeconfig from caches (the
Secret cache of the hub namespace, or the file), then:
- misconfigured (`BadKubeConfig`, `InsecureKubeConfig`, unsupported source): the
  connection is stopped and nothing is retried; a change of the object, its Secret or its
  file brings the key back;
- otherwise the connection is given the kubeconfig (a changed one rebuilds the client)
  and the condition follows the connection: `Active` once its caches synced,
  `ClientConnectionFailed` with attempts and next attempt while it retries on its own.
The condition is written only when status, reason or message change, guarded by
resourceVersion. Connections report their state changes back as keys in the queue, so
the reconciler itself never waits on a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import structlog

from core.api.codec import to_builtins
from core.api.json_types import JsonDict
from core.api.multikueue import LocationType, MultiKueueCluster
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.kube.informer import EventHandlers, Informer
from core.kube.micro_time import utc_now
from core.kube.object_meta import name_of
from core.kube.status_writer import write_status
from core.kube.workqueue import WorkQueue
from core.manager.field_manager import MULTIKUEUE_FIELD_MANAGER
from hub.multikueue.connections.active_condition import (
    ActiveState,
    cluster_connected,
    cluster_misconfigured,
    cluster_unreachable,
    with_condition,
)
from hub.multikueue.connections.kubeconfig_file_watch import KubeconfigFileWatch
from hub.multikueue.connections.kubeconfig_source import (
    DEFAULT_KUBECONFIG_ROOT,
    KubeconfigProblem,
    WorkerKubeconfig,
    resolve_kubeconfig,
)
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.connections.worker_connection import (
    ConnectionPhase,
    ConnectionSettings,
    ConnectionState,
    WorkerConnection,
)
from hub.multikueue.connections.worker_events import WorkerDisconnected

MULTIKUEUE_CLUSTERS = kind_info("MultiKueueCluster")
CLUSTERS_BY_SECRET = "kubeconfig-secret"


def kubeconfig_secret_index(cluster: MultiKueueCluster) -> Iterable[str]:
    """Index clusters by the name of the Secret holding their kubeconfig."""
    ref = cluster.spec.cluster_source.kube_config
    if ref is None or ref.location_type is not LocationType.SECRET or not ref.location:
        return ()
    return (ref.location,)


def wanted_condition(state: ConnectionState) -> ActiveState | None:
    """The Active condition a connection's state calls for (None: attempt still running)."""
    if state.phase is ConnectionPhase.CONNECTED:
        return cluster_connected()
    if state.phase is ConnectionPhase.FAILED and state.next_attempt_at is not None:
        return cluster_unreachable(state.last_error, state.failed_attempts, state.next_attempt_at)
    return None


class ClusterController:
    """Keeps one connection per MultiKueueCluster and its Active condition current."""

    def __init__(
        self,
        client: KubeClient,
        clusters: Informer[MultiKueueCluster],
        secrets: Informer[JsonDict],
        registry: WorkerRegistry,
        *,
        namespace: str,
        origin: str,
        settings: ConnectionSettings,
        kubeconfig_root: Path = DEFAULT_KUBECONFIG_ROOT,
        path_poll_interval_seconds: float = 2.0,
        wall_clock: Callable[[], datetime] = utc_now,
        workers: int = 2,
    ) -> None:
        self.client = client
        self.clusters = clusters
        self.secrets = secrets
        self.registry = registry
        self.namespace = namespace
        self.origin = origin
        self.settings = settings
        self.kubeconfig_root = kubeconfig_root
        self.wall_clock = wall_clock
        self.workers = workers
        self.queue: WorkQueue[str] = WorkQueue("multikueue-clusters")
        self.file_watch = KubeconfigFileWatch(path_poll_interval_seconds)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._group: asyncio.TaskGroup | None = None
        self.log = structlog.get_logger("hub.multikueue").bind(controller="multikueue-cluster")
        clusters.store.add_indexer(CLUSTERS_BY_SECRET, kubeconfig_secret_index)
        clusters.add_handlers(
            EventHandlers(
                on_add=self._enqueue_cluster,
                on_update=lambda _, new: self._enqueue_cluster(new),
                on_delete=self._enqueue_cluster,
            )
        )
        secrets.add_handlers(
            EventHandlers(
                on_add=self._enqueue_secret_users,
                on_update=lambda _, new: self._enqueue_secret_users(new),
                on_delete=self._enqueue_secret_users,
            )
        )

    async def run(self) -> None:
        """Reconcile until cancelled; connections run as tasks of this controller."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                group.create_task(self.file_watch.run(self.queue.add), name="kubeconfig-files")
                await self.queue.run_workers(self.reconcile, self.workers)
        finally:
            self._group = None
            self.queue.shut_down()
            for name in list(self._tasks):
                await self._stop(name, "hub stopping")

    async def reconcile(self, name: str) -> None:
        cluster = self.clusters.store.get(name)
        if cluster is None or cluster.metadata.deletion_timestamp is not None:
            self.file_watch.forget(name)
            await self._stop(name, "MultiKueueCluster deleted")
            return
        try:
            kubeconfig = await self._kubeconfig(cluster)
        except KubeconfigProblem as problem:
            await self._stop(name, f"{problem.reason}: {problem}")
            await self._write(cluster, cluster_misconfigured(problem.reason, str(problem)))
            return
        connection = self._connection(name)
        connection.configure(kubeconfig)
        wanted = wanted_condition(connection.state)
        if wanted is not None:
            await self._write(cluster, wanted)

    # -- kubeconfig ------------------------------------------------------------------

    async def _kubeconfig(self, cluster: MultiKueueCluster) -> WorkerKubeconfig:
        name = cluster.metadata.name
        ref = cluster.spec.cluster_source.kube_config
        if ref is not None and ref.location_type is LocationType.PATH:
            self.file_watch.track(name, ref.location)
            return await asyncio.to_thread(self._resolve, cluster)
        self.file_watch.forget(name)
        return self._resolve(cluster)

    def _resolve(self, cluster: MultiKueueCluster) -> WorkerKubeconfig:
        return resolve_kubeconfig(
            cluster,
            secrets=lambda secret: self.secrets.store.get_by_name(secret, self.namespace),
            namespace=self.namespace,
            kubeconfig_root=self.kubeconfig_root,
        )

    # -- connections -----------------------------------------------------------------

    def _connection(self, name: str) -> WorkerConnection:
        connection = self.registry.connection(name)
        if connection is not None and name in self._tasks:
            return connection
        if self._group is None:
            raise RuntimeError("the cluster controller is not running")
        connection = WorkerConnection(
            name,
            self.origin,
            self.settings,
            on_change=lambda changed: self.queue.add(changed.name),
            listener=self.registry.publish,
            wall_clock=self.wall_clock,
        )
        self.registry.attach(connection)
        self._tasks[name] = self._group.create_task(
            self._supervise(connection), name=f"multikueue-worker-{name}"
        )
        return connection

    async def _supervise(self, connection: WorkerConnection) -> None:
        """Run a connection; a crash is logged and the cluster reconciled afresh."""
        try:
            await connection.run()
        except Exception:
            self.log.exception("multikueue.connection_crashed", cluster=connection.name)
            if self.registry.connection(connection.name) is connection:
                self.registry.detach(connection.name)
                self._tasks.pop(connection.name, None)
                self.queue.add_rate_limited(connection.name)

    async def _stop(self, name: str, reason: str) -> None:
        task = self._tasks.pop(name, None)
        connection = self.registry.detach(name)
        if task is None or connection is None:
            return
        was_connected = connection.connected
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.log.info("multikueue.connection_stopped", cluster=name, reason=reason)
        if was_connected:
            since = connection.disconnected_since or self.wall_clock()
            self.registry.publish(WorkerDisconnected(name, since, reason))

    # -- status ----------------------------------------------------------------------

    async def _write(self, cluster: MultiKueueCluster, wanted: ActiveState) -> None:
        def compute(current: MultiKueueCluster) -> JsonDict | None:
            conditions = with_condition(
                current.status.conditions,
                wanted,
                generation=current.metadata.generation,
                now=self.wall_clock(),
            )
            if conditions is None:
                return None
            return {"conditions": [to_builtins(condition) for condition in conditions]}

        try:
            result = await write_status(
                self.client,
                MULTIKUEUE_CLUSTERS,
                cluster,
                compute,
                into=MultiKueueCluster,
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return
        if result.written:
            self.log.info(
                "multikueue.cluster_condition",
                cluster=cluster.metadata.name,
                status=wanted.status.value,
                reason=wanted.reason,
                message=wanted.message,
            )

    # -- event handlers --------------------------------------------------------------

    def _enqueue_cluster(self, cluster: MultiKueueCluster) -> None:
        self.queue.add(cluster.metadata.name)

    def _enqueue_secret_users(self, secret: JsonDict) -> None:
        for key in self.clusters.store.index_keys(CLUSTERS_BY_SECRET, name_of(secret)):
            self.queue.add(key)
