"""The hub process: the Kueue manager runtime plus what only the manager cluster runs.

`Hub` is a `core.manager.manager.KueueManager` (informers, engine, controllers, webhooks,
leader election) that adds, on the manager cluster:
- MultiKueue: worker connections and dispatch, run by the leader only;
- the pending-workloads visibility API, and delegated authentication for it and /metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web

from core.api.codec import decode
from core.api.meta import OwnerReference
from core.kube.client import KubeClient
from core.manager.health_server import bound_port, serve
from core.manager.manager import (
    CachesNotSynced,
    KueueManager,
    LeadershipLost,
    ManagerOptions,
    ManagerStopped,
    WebhooksFailed,
    split_bind_address,
)
from core.manager.request_auth import RequestAuth
from core.manager.serving_tls import ServingCertificate, server_context
from hub.dashboard.serving import hub_dashboard, serve_dashboard
from hub.dashboard.source import WorkerSummary, worker_summaries
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.connections.service import MultiKueueConnections
from hub.multikueue.dispatch.service import MultiKueueDispatch
from hub.visibility.delegated_auth import DelegatedAuth
from hub.visibility.engine_source import EngineSource
from hub.visibility.server import HEALTH_PATH as VISIBILITY_HEALTH_PATH
from hub.visibility.server import create_app

__all__ = [
    "CachesNotSynced",
    "Hub",
    "HubOptions",
    "LeadershipLost",
    "ManagerStopped",
    "WebhooksFailed",
    "split_bind_address",
]


@dataclass(frozen=True, slots=True)
class HubOptions(ManagerOptions):
    """The manager's process settings plus the hub's own."""

    visibility_port: int | None = None
    """Serve the pending-workloads API on this port (None: not served)."""
    visibility_certificate: ServingCertificate | None = None
    """With `visibility_port`: serve over TLS with delegated authentication and
    authorization, as an aggregated API server (None: plain HTTP, open to anyone)."""
    multikueue: bool = True
    """Connect to MultiKueue workers and dispatch to them (the leader only)."""
    dashboard_port: int | None = None
    """Serve the fleet dashboard on this port (None: not served); always authenticated."""
    dashboard_certificate: ServingCertificate | None = None
    """With `dashboard_port`: serve it over TLS (None: plain HTTP, for loopback or a
    TLS-terminating proxy in front)."""


class Hub(KueueManager):
    """One hub replica (see module docstring)."""

    options: HubOptions
    _workers: WorkerRegistry | None = None
    """The worker connections, once this replica leads (for the dashboard's fleet view)."""

    def _hub_options(self) -> HubOptions:
        options = self.options
        return options if isinstance(options, HubOptions) else HubOptions()

    def _lead_extensions(self, group: asyncio.TaskGroup) -> None:
        """Worker connections and dispatch: leader-only, built once per process."""
        if not self._hub_options().multikueue:
            return
        connections = MultiKueueConnections(self.client, self.configuration)
        dispatch = MultiKueueDispatch(
            self.client,
            self.configuration,
            connections.registry,
            metrics_registry=self.metrics.registry,
            workloads=self.informers.workloads,
            jobs=self.informers.jobs,
        )
        self._workers = connections.registry
        group.create_task(connections.run(), name="multikueue-connections")
        group.create_task(dispatch.run(), name="multikueue-dispatch")

    def _request_auth(self) -> RequestAuth | None:
        options = self._hub_options()
        secure_visibility = (
            options.visibility_port is not None and options.visibility_certificate is not None
        )
        if secure_visibility or options.metrics_auth or options.dashboard_port is not None:
            return DelegatedAuth(self.client)
        return None

    def _owners(self, namespace: str, name: str) -> Sequence[OwnerReference]:
        workload = self.versions.current(f"{namespace}/{name}") or {}
        refs = (workload.get("metadata") or {}).get("ownerReferences") or ()
        return [decode(OwnerReference, ref) for ref in refs]

    def _worker_client(self, name: str) -> KubeClient | None:
        """The leader's client for worker `name` while connected (for the dashboard)."""
        if self._workers is None or not self.leading:
            return None
        connection = self._workers.connection(name)
        return None if connection is None else connection.client

    def _worker_summaries(self) -> list[WorkerSummary] | None:
        if self._workers is None or not self.leading:
            return None
        return worker_summaries(self._workers.connections())

    async def _start_extra_servers(
        self, runners: list[web.AppRunner], auth: RequestAuth | None
    ) -> None:
        options = self._hub_options()
        if options.dashboard_port is not None and isinstance(auth, DelegatedAuth):
            dashboard = hub_dashboard(
                self.client,
                self.informers,
                self.host.engine,
                self._worker_summaries,
                auth,
                priority_values=self.cluster_feed.priority_values,
                metrics_registry=self.metrics.registry,
                worker_client=self._worker_client,
            )
            runner = await serve_dashboard(
                dashboard,
                auth,
                options.bind_host,
                options.dashboard_port,
                options.dashboard_certificate,
            )
            runners.append(runner)
            self.ports["dashboard"] = bound_port(runner)
        if options.visibility_port is None:
            return
        source = EngineSource(self.host.engine, owners=self._owners)
        certificate = options.visibility_certificate
        if certificate is None or auth is None:
            app = create_app(source)
            runner = await serve(app, options.bind_host, options.visibility_port)
        else:
            tls = server_context(certificate)
            auth.follow_trust(tls)
            guard = auth.middleware(open_paths=frozenset({VISIBILITY_HEALTH_PATH}))
            app = create_app(source, middlewares=[guard])
            runner = await serve(app, options.bind_host, options.visibility_port, ssl_context=tls)
        runners.append(runner)
        self.ports["visibility"] = bound_port(runner)
