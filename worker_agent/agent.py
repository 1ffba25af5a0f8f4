"""The worker agent: local admission plus the capacity report, in one process.

Local admission is the Kueue manager runtime (`core.manager.manager.KueueManager`, the
same the hub is built on) run against the worker cluster
in single-cluster mode: the same informers, engine, scheduler loop and controllers, so a
Workload the MultiKueue manager created here (and its suspended Job carrying
`kueue.x-k8s.io/prebuilt-workload-name`) is admitted and the Job unsuspended exactly as
on an upstream Kueue worker. Webhooks are off unless asked for: dispatched Jobs arrive
suspended already.

Beside it runs the `CapacityPublisher`, reading the runtime's caches and engine (no second
copy of queues or flavors) and writing only while this replica leads. The agent serves the
probes and metrics itself so /readyz also waits for the publisher's caches, and
/metrics carries the publisher's series next to the runtime's.

Without `integrations.frameworks` in its Configuration the agent manages every job kind
fleetq implements (a worker runs what managers dispatch to it); a kind whose CRD the
worker lacks is left out at start with a warning.

Stopping (SIGTERM) cancels both; the publisher marks its report Reporting=False and a
leader releases its Lease. Losing the Lease stops the agent with `LeadershipLost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from dataclasses import dataclass

import structlog
from aiohttp import web

from core.kube.client import KubeClient
from core.manager.configuration import Configuration, LeaderElection
from core.manager.health_server import bound_port, metrics_routes, probe_routes, serve
from core.manager.manager import KueueManager, ManagerOptions, ManagerStopped, split_bind_address
from core.manager.webhook_service import UrlRegistration
from integrations.registry import REGISTRY
from worker_agent.capacity_publisher import CapacityPublisher, PublisherSettings
from worker_agent.publisher_metrics import PublisherMetrics
from worker_agent.queue_figures_source import EngineQueueFigures

AGENT_LEASE_NAME = "fleetq-agent.fleetq.dev"


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """Process-level settings of the agent (the Configuration file carries the rest)."""

    cluster_name: str
    """Name of this worker; also the name of its WorkerCapacity object."""
    health_port: int | None = None
    """None: the Configuration's health.healthProbeBindAddress; 0: any free port; <0: off."""
    metrics_port: int | None = None
    """None: the Configuration's metrics.bindAddress; 0: any free port; <0: off."""
    bind_host: str = ""
    identity: str = ""
    """Leader-election identity; default `<hostname>_<random>`."""
    lease_namespace: str | None = None
    """Default: leaderElection.resourceNamespace, else the Configuration's namespace."""
    lease_name: str | None = None
    """Default: `lease_name_for` the Configuration. Given, the agent holds exactly this
    Lease — say upstream Kueue's own, on a worker where the agent stands for Kueue."""
    webhooks: bool = False
    webhook_port: int | None = None
    webhook_registration: UrlRegistration | None = None
    publisher: PublisherSettings | None = None
    """Pacing of the report; None: defaults for `cluster_name`."""
    queue_status_interval_seconds: float = 1.0


def lease_name_for(election: LeaderElection) -> str:
    """The agent's own Lease unless the Configuration names one, so an agent and a hub
    on the same cluster never contend for one Lease."""
    if election.resource_name == LeaderElection().resource_name:
        return AGENT_LEASE_NAME
    return election.resource_name


class Agent:
    """One agent replica (see module docstring). Builds everything, does no I/O until run."""

    def __init__(
        self, configuration: Configuration, client: KubeClient, options: AgentOptions
    ) -> None:
        if not configuration.frameworks_set:
            # A worker runs whatever kinds the managers dispatch to it: every kind fleetq
            # has, less those whose CRD the worker lacks (left out at start).
            configuration = dataclasses.replace(configuration, frameworks=REGISTRY.names)
        self.configuration = configuration
        self.options = options
        self.manager = KueueManager(
            configuration,
            client,
            ManagerOptions(
                health_port=-1,
                metrics_port=-1,
                bind_host=options.bind_host,
                identity=options.identity,
                lease_namespace=options.lease_namespace,
                lease_name=options.lease_name or lease_name_for(configuration.leader_election),
                queue_status_interval_seconds=options.queue_status_interval_seconds,
                webhooks=options.webhooks,
                webhook_port=options.webhook_port,
                webhook_registration=options.webhook_registration,
            ),
        )
        manager = self.manager
        self.log = structlog.get_logger("worker_agent").bind(
            cluster=options.cluster_name, identity=manager.identity
        )
        self.publisher = CapacityPublisher(
            client,
            options.publisher or PublisherSettings(cluster_name=options.cluster_name),
            resource_flavors=manager.informers.resource_flavors,
            cluster_queues=manager.informers.cluster_queues,
            topologies=manager.informers.topologies,
            queue_figures=EngineQueueFigures(manager.host.engine).figures,
            wait_for=list(manager.informers.engine_feeds),
            is_leading=lambda: manager.leading,
            metrics=PublisherMetrics(manager.metrics.registry),
        )
        manager.host.add_listener(self.publisher)
        self.ports: dict[str, int] = {}

    @property
    def ready(self) -> bool:
        return self.not_ready_reason() is None

    def not_ready_reason(self) -> str | None:
        """Why /readyz fails, or None when the agent is fully up."""
        reason = self.manager.not_ready_reason()
        if reason is None and not self.publisher.synced:
            reason = "capacity caches (nodes, pods) not synced"
        return reason

    async def run(self) -> None:
        """Run until cancelled; raises ManagerStopped reasons (e.g. LeadershipLost)."""
        runners: list[web.AppRunner] = []
        try:
            await self._start_servers(runners)
            async with asyncio.TaskGroup() as group:
                group.create_task(self.manager.run(), name="local-admission")
                group.create_task(self.publisher.run(), name="capacity-publisher")
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], ManagerStopped):
                raise group.exceptions[0] from None
            raise
        finally:
            self.log.info("agent.stopping")
            for runner in runners:
                with contextlib.suppress(Exception):
                    await runner.cleanup()

    async def _start_servers(self, runners: list[web.AppRunner]) -> None:
        health = _port(self.options.health_port, self.configuration.health_probe_bind_address)
        metrics = _port(self.options.metrics_port, self.configuration.metrics_bind_address)
        apps: dict[int, web.Application] = {}
        if health is not None:
            probe_routes(apps.setdefault(health, web.Application()), self.not_ready_reason)
        if metrics is not None:
            metrics_routes(apps.setdefault(metrics, web.Application()), self.manager.metrics)
        for port, app in apps.items():  # one port (even 0) may serve both
            runner = await serve(app, self.options.bind_host, port)
            runners.append(runner)
            actual = bound_port(runner)
            if port == health:
                self.ports["health"] = actual
            if port == metrics:
                self.ports["metrics"] = actual
        self.log.info("agent.serving", **self.ports)


def _port(option: int | None, bind_address: str) -> int | None:
    if option is None:
        return split_bind_address(bind_address)[1]
    return None if option < 0 else option
