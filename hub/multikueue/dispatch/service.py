"""MultiKueueDispatch: the remote lifecycle, the dispatcher and GC, as one task for the hub.

Construct it once with the manager's client, the Configuration and the connections'
`WorkerRegistry`; `run()` it on the leader only (it writes Workload and Job statuses on
the manager and objects on workers). It watches the manager's Workloads and Jobs itself,
unless the hub hands over its own informers (`workloads=`, `jobs=`; recommended: one
cache per kind and cluster), and it waits for every cache to sync before the first pass,
so no decision, and above all no garbage collection, is taken on an empty cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime

import structlog
from prometheus_client import CollectorRegistry

from core.api.json_types import JsonDict
from core.api.registry import kind_info
from core.engine.dispatch.placement import CAPACITY_AWARE_DISPATCHER
from core.kube.client import KubeClient
from core.kube.informer import Informer
from core.kube.micro_time import utc_now
from core.manager.configuration import Configuration
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.dispatch.capacity_dispatcher import CapacityAwareDispatcher
from hub.multikueue.dispatch.capacity_view import CapacityView
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics
from hub.multikueue.dispatch.dispatchers import (
    AllAtOnceDispatcher,
    Dispatcher,
    ExternalDispatcher,
    IncrementalDispatcher,
)
from hub.multikueue.dispatch.garbage_collector import GarbageCollector
from hub.multikueue.dispatch.remote_writes import RemoteWrites
from hub.multikueue.dispatch.settings import (
    ALL_AT_ONCE_DISPATCHER,
    INCREMENTAL_DISPATCHER,
    DispatchSettings,
)
from hub.multikueue.dispatch.workload_reconciler import WorkloadReconciler
from integrations.framework.job_capabilities import dispatchable
from integrations.framework.registry import FrameworkRegistry

SYNC_TIMEOUT_SECONDS = 120.0


def make_dispatcher(settings: DispatchSettings, view: CapacityView) -> Dispatcher:
    """The dispatcher the settings name; any unknown name is an external one (as upstream)."""
    name = settings.dispatcher_name
    if name == ALL_AT_ONCE_DISPATCHER:
        return AllAtOnceDispatcher()
    if name == INCREMENTAL_DISPATCHER:
        return IncrementalDispatcher(
            settings.incremental_step_size, settings.incremental_round_seconds
        )
    if name == CAPACITY_AWARE_DISPATCHER:
        return CapacityAwareDispatcher(
            view,
            timeout_seconds=settings.nomination_timeout_seconds,
            policy=settings.placement_policy,
        )
    return ExternalDispatcher(name)


class MultiKueueDispatch:
    """See the module docstring."""

    def __init__(
        self,
        manager_client: KubeClient,
        configuration: Configuration,
        registry: WorkerRegistry,
        *,
        settings: DispatchSettings | None = None,
        metrics_registry: CollectorRegistry | None = None,
        replica_role: str = "leader",
        workloads: Informer[JsonDict] | None = None,
        jobs: Mapping[str, Informer[JsonDict]] | None = None,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings or DispatchSettings.from_configuration(configuration)
        self.registry = registry
        self._own: list[Informer[JsonDict]] = []
        if workloads is None:
            workloads = Informer(manager_client, kind_info("Workload"), into=dict)
            self._own.append(workloads)
        self.kinds = FrameworkRegistry(dispatchable(configuration.job_kinds))
        if jobs is None:
            jobs = {
                kind.framework: Informer(manager_client, kind.resource, into=dict)
                for kind in self.kinds
            }
            self._own.extend(jobs.values())
        self.workloads, self.jobs = workloads, jobs
        self.metrics = (
            None if metrics_registry is None else DispatchMetrics(metrics_registry, replica_role)
        )
        self.view = CapacityView(registry, ttl_seconds=self.settings.local_queue_ttl_seconds)
        self.dispatcher = make_dispatcher(self.settings, self.view)
        self.writes = RemoteWrites(self.settings.origin, self.metrics)
        self.reconciler = WorkloadReconciler(
            manager_client,
            registry,
            self.dispatcher,
            self.settings,
            workloads=workloads.store,
            jobs={framework: informer.store for framework, informer in jobs.items()},
            kinds=self.kinds,
            writes=self.writes,
            metrics=self.metrics,
            wall_clock=wall_clock,
        )
        self.gc = GarbageCollector(
            registry,
            workloads.store,
            self.writes,
            kinds=self.kinds,
            interval_seconds=self.settings.gc_interval_seconds,
            busy=self.reconciler.is_removing,
        )
        self.log = structlog.get_logger("hub.multikueue.dispatch")

    async def run(self) -> None:
        """Watch, wait for the caches, then reconcile and collect until cancelled."""
        unsubscribe = self.registry.subscribe(self.reconciler.on_worker_event)
        unsubscribe_gc = self.registry.subscribe(self.gc.on_worker_event)
        try:
            async with asyncio.TaskGroup() as group:
                for informer in self._own:
                    group.create_task(informer.run(), name="multikueue-dispatch-cache")
                async with asyncio.timeout(SYNC_TIMEOUT_SECONDS):
                    await self.workloads.wait_synced()
                    for informer in self.jobs.values():
                        await informer.wait_synced()
                self.workloads.add_handlers(self.reconciler.workload_handlers())
                for kind in self.kinds:
                    job_cache = self.jobs.get(kind.framework)
                    if job_cache is not None:
                        job_cache.add_handlers(self.reconciler.job_handlers(kind))
                if self.metrics is not None:
                    for connection in self.registry.connections():
                        self.metrics.worker_state(connection.name, connection.connected)
                self.log.info("multikueue.dispatch_started", dispatcher=self.dispatcher.name)
                group.create_task(self.reconciler.run(), name="multikueue-workloads")
                group.create_task(self.gc.run(), name="multikueue-gc")
        finally:
            unsubscribe()
            unsubscribe_gc()
            self.reconciler.queue.shut_down()
