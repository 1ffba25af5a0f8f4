"""MultiKueueConnections: everything this package runs, as one thing the hub starts.

Give it the manager's client and the Configuration; `run()` (in the hub's TaskGroup, on the
leader: it writes statuses and opens a client per worker) watches MultiKueueClusters,
MultiKueueConfigs, MultiKueueClusterSets, AdmissionChecks and the Secrets of the hub
namespace, then runs the cluster and admission-check controllers until cancelled (and,
with the MultiKueueManagerQuotaAutomation gate on, manager quota automation, which also
watches ClusterQueues and LocalQueues). A
manager without the MultiKueueClusterSet CRD (helm never upgrades CRDs, so an upgraded
release may lack it) runs without sets: checks naming one say it is not found.
`registry` is the view the rest of the hub uses; subscribe to it (or pass `listener`)
for worker and remote-object changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.multikueue import MultiKueueCluster, MultiKueueConfig
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import Forbidden, NotFound
from core.kube.informer import Informer
from core.kube.micro_time import utc_now
from core.kube.resources import SECRETS
from core.manager.configuration import Configuration
from hub.multikueue.connections.admission_check_controller import AdmissionCheckController
from hub.multikueue.connections.cluster_controller import ClusterController
from hub.multikueue.connections.cluster_lists import ClusterLists
from hub.multikueue.connections.kubeconfig_source import DEFAULT_KUBECONFIG_ROOT
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.connections.remote_caches import RemoteKinds, probe
from hub.multikueue.connections.worker_connection import ConnectionSettings
from hub.multikueue.connections.worker_events import WorkerListener
from hub.multikueue.quota_automation.controller import (
    DEFAULT_RESYNC_SECONDS,
    QuotaAutomationController,
)
from integrations.framework.job_capabilities import dispatchable

SYNC_TIMEOUT_SECONDS = 120.0


class MultiKueueConnections:
    """Caches, controllers and the registry of worker connections (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        configuration: Configuration,
        *,
        settings: ConnectionSettings | None = None,
        kubeconfig_root: Path = DEFAULT_KUBECONFIG_ROOT,
        path_poll_interval_seconds: float = 2.0,
        listener: WorkerListener | None = None,
        wall_clock: Callable[[], datetime] = utc_now,
        quota_resync_seconds: float = DEFAULT_RESYNC_SECONDS,
    ) -> None:
        self.client = client
        self.namespace = configuration.namespace
        settings = settings or ConnectionSettings(
            qps=configuration.multikueue.worker_client_qps,
            burst=configuration.multikueue.worker_client_burst,
        )
        if settings.kinds == RemoteKinds():
            kinds = RemoteKinds(
                jobs={
                    kind.framework: kind.resource for kind in dispatchable(configuration.job_kinds)
                }
            )
            settings = replace(settings, kinds=kinds)
        self.settings = settings
        self.clusters: Informer[MultiKueueCluster] = Informer(
            client, kind_info("MultiKueueCluster"), into=MultiKueueCluster
        )
        self.configs: Informer[MultiKueueConfig] = Informer(
            client, kind_info("MultiKueueConfig"), into=MultiKueueConfig
        )
        self.cluster_sets: Informer[MultiKueueClusterSet] = Informer(
            client, kind_info("MultiKueueClusterSet"), into=MultiKueueClusterSet
        )
        self.with_cluster_sets = True
        self.checks: Informer[AdmissionCheck] = Informer(
            client, kind_info("AdmissionCheck"), into=AdmissionCheck
        )
        self.secrets: Informer[dict[str, Any]] = Informer(
            client, SECRETS, into=dict, namespace=self.namespace
        )
        self.cluster_lists = ClusterLists(self.configs, self.cluster_sets, self.clusters)
        self.registry = WorkerRegistry(self.checks, self.cluster_lists)
        if listener is not None:
            self.registry.subscribe(listener)
        self.cluster_controller = ClusterController(
            client,
            self.clusters,
            self.secrets,
            self.registry,
            namespace=self.namespace,
            origin=configuration.multikueue.origin,
            settings=settings,
            kubeconfig_root=kubeconfig_root,
            path_poll_interval_seconds=path_poll_interval_seconds,
            wall_clock=wall_clock,
        )
        self.check_controller = AdmissionCheckController(
            client, self.checks, self.cluster_lists, self.clusters, wall_clock=wall_clock
        )
        self.quota_automation: QuotaAutomationController | None = None
        if configuration.feature_gates.multikueue_quota_automation:
            self.quota_automation = QuotaAutomationController(
                client,
                self.checks,
                self.configs,
                self.cluster_lists,
                self.registry,
                resync_seconds=quota_resync_seconds,
            )
        self.log = structlog.get_logger("hub.multikueue")

    def informers(self) -> Iterator[Informer[Any]]:
        yield self.clusters
        yield self.configs
        if self.with_cluster_sets:
            yield self.cluster_sets
        yield self.checks
        yield self.secrets
        if self.quota_automation is not None:
            yield from self.quota_automation.informers()

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers())

    async def run(self) -> None:
        """Watch, then reconcile, until cancelled."""
        await self._find_cluster_sets()
        async with asyncio.TaskGroup() as group:
            for informer in self.informers():
                group.create_task(informer.run(), name="multikueue-cache")
            async with asyncio.timeout(SYNC_TIMEOUT_SECONDS):
                for informer in self.informers():
                    await informer.wait_synced()
            self.log.info("multikueue.caches_synced", namespace=self.namespace)
            group.create_task(self.cluster_controller.run(), name="multikueue-clusters")
            group.create_task(self.check_controller.run(), name="multikueue-checks")
            if self.quota_automation is not None:
                group.create_task(self.quota_automation.run(), name="multikueue-quotas")

    async def _find_cluster_sets(self) -> None:
        """Leave MultiKueueClusterSets out when the manager does not serve the kind."""
        try:
            await probe(self.client, self.cluster_sets.watcher.resource, SYNC_TIMEOUT_SECONDS)
        except (NotFound, Forbidden) as error:
            self.with_cluster_sets = False
            self.log.warning(
                "multikueue.no_cluster_sets",
                reason=error.reason,
                hint="apply the fleetq.dev_multikueueclustersets CRD from the hub chart",
            )
