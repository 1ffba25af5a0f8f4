"""Start the dashboard beside the hub's other servers (the one place the hub wires it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aiohttp import web
from prometheus_client import CollectorRegistry

from core.engine.engine import Engine
from core.kube.client import KubeClient
from core.manager.health_server import serve
from core.manager.informer_set import ManagerInformers
from core.manager.serving_tls import ServingCertificate, server_context
from hub.dashboard.access import DelegatedDashboardAuth
from hub.dashboard.actions import KubeActions
from hub.dashboard.history import DispatchLatency, FleetHistory, HistorySampler
from hub.dashboard.server import Dashboard
from hub.dashboard.source import HubSource, WorkerSummary
from hub.dashboard.workload_reads import KubeWorkloadReads
from hub.visibility.delegated_auth import DelegatedAuth


def hub_dashboard(
    client: KubeClient,
    informers: ManagerInformers,
    engine: Engine,
    workers: Callable[[], list[WorkerSummary] | None],
    auth: DelegatedAuth,
    *,
    priority_values: Mapping[str, int],
    metrics_registry: CollectorRegistry,
    worker_client: Callable[[str], KubeClient | None],
) -> Dashboard:
    source = HubSource(
        cluster_queues=informers.cluster_queues,
        local_queues=informers.local_queues,
        cohorts=informers.cohorts,
        resource_flavors=informers.resource_flavors,
        workloads=informers.workloads,
        workload_priority_values=priority_values,
        engine=engine,
        workers=workers,
    )
    sampler = HistorySampler(
        FleetHistory(), source.cluster_queues, DispatchLatency(metrics_registry)
    )
    return Dashboard(
        source,
        DelegatedDashboardAuth(auth),
        KubeActions(client),
        reads=KubeWorkloadReads(client, worker_client),
        sampler=sampler,
        version=source.version,
        changes=source.changes,
    )


async def serve_dashboard(
    dashboard: Dashboard,
    auth: DelegatedAuth,
    host: str,
    port: int,
    certificate: ServingCertificate | None,
) -> web.AppRunner:
    tls = None
    if certificate is not None:
        tls = server_context(certificate)
        auth.follow_trust(tls)
    return await serve(dashboard.app(), host, port, ssl_context=tls)
