"""The Kueue manager runtime both processes run: informers, engine, controllers, servers.

The hub (on the manager cluster) and the worker agent (on each worker) are both a Kueue
manager: `KueueManager` builds every part from a Configuration and a client of its cluster
(no I/O in the constructor) and `run()` runs them until cancelled:
1. probe and metrics servers start (and whatever servers a subclass adds);
2. informers list and watch; every change feeds the engine, also on a follower, so a
   standby's caches and engine are warm when it takes over;
3. once every cache has synced, the admission webhooks start (on every replica: they
   answer from the caches; see `webhook_service`), /readyz turns ready when they
   serve, and the replica campaigns for the Lease (with leaderElection.leaderElect;
   otherwise it simply leads);
4. the leader catches up with the apiserver, then runs the scheduler loop, the Workload
   status writer, the queue-status writer, the finalizer, Workload-priority, topology
   ungater, TAS node-failure and Job controllers and the event recorder under one
   TaskGroup (plus a subclass's leader work: the hub's MultiKueue). Only the leader
   decides and writes.
Losing the Lease ends `run()` with `LeadershipLost` (the process exits and restarts
clean, as upstream's manager does); cancelling `run()` (SIGTERM) stops everything and a
leader releases its Lease so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import structlog
from aiohttp import web

from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.kube.events import EventRecorder
from core.kube.leader_election import LeaderElectionConfig, LeaderElector
from core.manager.cluster_object_feed import ClusterObjectFeed
from core.manager.configuration import Configuration
from core.manager.engine_host import EngineHost
from core.manager.engine_settings import engine_config_for
from core.manager.event_reasons import CONTROLLER_NAME
from core.manager.group_workload_controller import GroupKind, GroupWorkloadController
from core.manager.health_server import (
    PROBE_PATHS,
    bound_port,
    metrics_routes,
    probe_routes,
    serve,
)
from core.manager.informer_set import Cache, ManagerInformers
from core.manager.job_actions import JobActions
from core.manager.job_controller import JobController, JobManagement
from core.manager.leader_catch_up import catch_up_workloads
from core.manager.metrics import ManagerMetrics
from core.manager.queue_status import QueueStatusWriter
from core.manager.referenced_lookup import CachedReferences, bind_kind
from core.manager.request_auth import RequestAuth
from core.manager.resource_finalizers import ResourceInUseFinalizers
from core.manager.scheduler_loop import SchedulerLoop
from core.manager.serving_tls import ServingCertificate, server_context
from core.manager.tas_node_failure import NodeFailureController
from core.manager.topology_ungater import TopologyUngater
from core.manager.variant_controller import VariantController
from core.manager.webhook_service import ManagerWebhooks, UrlRegistration
from core.manager.workload_feed import WorkloadFeed
from core.manager.workload_priority_sync import WorkloadPrioritySync
from core.manager.workload_status_sync import WorkloadStatusWriter
from core.manager.workload_transitions import WorkloadTransitions
from core.manager.workload_versions import WorkloadVersions
from integrations.framework.group_workloads import prebuilds_group_workloads
from integrations.framework.job_capabilities import reconciled
from integrations.framework.referenced_objects import referenced_resources
from integrations.framework.registry import FrameworkRegistry

SYNC_TIMEOUT_SECONDS = 120.0


class ManagerStopped(RuntimeError):
    """A reason for the hub to stop on its own (the process exits non-zero)."""


class LeadershipLost(ManagerStopped):
    """This replica led and lost the Lease; it stops so it can restart clean."""


class CachesNotSynced(ManagerStopped):
    """The first list of some watched resource never completed."""


class WebhooksFailed(ManagerStopped):
    """The webhook server could not start or stopped on its own."""


def split_bind_address(address: str) -> tuple[str, int]:
    """`":8081"` or `"0.0.0.0:8081"` → (host, port); an empty host means all interfaces."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {address!r} is not host:port")
    return host, int(port)


@dataclass(frozen=True, slots=True)
class ManagerOptions:
    """Process-level settings that the Configuration file does not carry."""

    health_port: int | None = None
    """None: the Configuration's health.healthProbeBindAddress; 0: any free port; <0: off."""
    metrics_port: int | None = None
    """None: the Configuration's metrics.bindAddress; 0: any free port; <0: off."""
    metrics_auth: bool = False
    """/metrics requires delegated authn/authz (/healthz and /readyz stay open)."""
    metrics_certificate: ServingCertificate | None = None
    """Serve /metrics over TLS; needs a metrics port apart from the probes' port."""
    bind_host: str = ""
    identity: str = ""
    """Leader-election identity; default `<hostname>_<random>`."""
    lease_namespace: str | None = None
    """Overrides leaderElection.resourceNamespace (default: the Configuration's namespace)."""
    lease_name: str | None = None
    queue_status_interval_seconds: float = 1.0
    status_workers: int = 32
    """Workload status writes in flight at once; each mostly waits on one round trip, so
    this bounds admissions per second (8 held a 50 jobs/s MultiKueue stream back)."""
    job_workers: int = 16
    """Jobs reconciled at once (a reconcile mostly waits on one write)."""
    webhooks: bool = True
    """Serve the admission webhooks (on every replica)."""
    webhook_port: int | None = None
    """None: the Configuration's webhook.port; 0: any free port."""
    webhook_registration: UrlRegistration | None = None
    """Out of cluster: serve on its host and register URL-based configurations; None:
    in cluster, behind the chart's Service-based configurations."""


class KueueManager:
    """One manager replica (see module docstring)."""

    def __init__(
        self,
        configuration: Configuration,
        client: KubeClient,
        options: ManagerOptions | None = None,
    ) -> None:
        self.configuration = configuration
        self.client = client
        self.options = options or ManagerOptions()
        self.identity = self.options.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.leader_elect = configuration.leader_election.leader_elect
        self.log = structlog.get_logger("hub").bind(identity=self.identity)
        self.metrics = ManagerMetrics(
            replica_role="follower" if self.leader_elect else "standalone",
            version=_version(),
            cluster_queue_resources=configuration.enable_cluster_queue_resource_metrics,
            local_queues=configuration.feature_gates.local_queue_metrics,
        )
        self.events = EventRecorder(
            client, reporting_controller=CONTROLLER_NAME, reporting_instance=self.identity
        )
        self.host = EngineHost(engine_config_for(configuration))
        self.job_kinds = configuration.job_kinds
        """The enabled job kinds (`integrations.frameworks` ∩ the registry)."""
        self.informers = ManagerInformers.create(
            client, FrameworkRegistry(reconciled(self.job_kinds))
        )
        informers = self.informers
        self.cluster_feed = ClusterObjectFeed(self.host, self.events)
        self.versions = WorkloadVersions(informers.workloads.store.get)
        self.workload_feed = WorkloadFeed(
            self.host, self.versions, self.cluster_feed.priority_values, self.events
        )
        management = JobManagement(
            manage_jobs_without_queue_name=configuration.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector=configuration.managed_jobs_namespace_selector,
            wait_for_pods_ready=configuration.wait_for_pods_ready is not None,
            elastic_jobs=configuration.feature_gates.elastic_jobs,
        )
        references = CachedReferences(informers.referenced)
        self.job_controllers: list[JobController | GroupWorkloadController] = []
        for kind in reconciled(self.job_kinds):
            group_kind = prebuilds_group_workloads(kind)
            if group_kind is not None:
                self.job_controllers.append(
                    self._group_controller(cast(GroupKind, group_kind), management)
                )
                continue
            self.job_controllers.append(
                JobController(
                    bind_kind(kind, references),
                    JobActions(kind.resource, client, self.events),
                    self.host,
                    self.versions,
                    jobs=informers.jobs[kind.framework].store,
                    workloads=informers.workloads.store,
                    resource_flavors=informers.resource_flavors.store,
                    namespaces=informers.namespaces.store,
                    pod_priority_classes=informers.pod_priority_classes.store,
                    workload_priority_values=self.cluster_feed.priority_values,
                    management=management,
                    queued_as_a_whole=self.job_kinds.queued_as_a_whole,
                    admission_checks=informers.admission_checks.store,
                )
            )
        self.status_writer = WorkloadStatusWriter(
            client,
            self.host,
            self.workload_feed,
            self.versions,
            WorkloadTransitions(self.metrics, self.events),
            workers=self.options.status_workers,
            on_written=self._workload_written,
        )
        self.queue_status = QueueStatusWriter(
            client,
            self.host,
            cluster_queues=informers.cluster_queues.store,
            local_queues=informers.local_queues.store,
            cohorts=informers.cohorts.store,
            fair_sharing=configuration.fair_sharing_enabled,
            metrics=self.metrics,
            events=self.events,
            interval_seconds=self.options.queue_status_interval_seconds,
        )
        self.finalizers = ResourceInUseFinalizers(
            client,
            self.host,
            cluster_queues=informers.cluster_queues.store,
            resource_flavors=informers.resource_flavors.store,
            admission_checks=informers.admission_checks.store,
            workloads=informers.workloads.store,
        )
        self.priority_sync = WorkloadPrioritySync(
            client,
            priority_classes=informers.workload_priority_classes.store,
            workloads=informers.workloads.store,
        )
        self.topology_ungater = TopologyUngater(
            client, workloads=informers.workloads.store, pods=informers.admitted_pods.store
        )
        self.node_failures = NodeFailureController(
            client,
            self.host,
            nodes=informers.nodes.store,
            workloads=informers.workloads.store,
            pods=informers.admitted_pods.store,
            resource_flavors=informers.resource_flavors.store,
        )
        self.variants = (
            VariantController(
                client,
                self.events,
                workloads=informers.workloads.store,
                local_queues=informers.local_queues.store,
                cluster_queues=informers.cluster_queues.store,
            )
            if configuration.feature_gates.concurrent_admission
            else None
        )
        self.scheduler = SchedulerLoop(self.host, self.metrics)
        self.webhooks = (
            ManagerWebhooks(
                configuration,
                client,
                informers,
                port=self.options.webhook_port,
                registration=self.options.webhook_registration,
            )
            if self.options.webhooks
            else None
        )
        self._register_handlers()
        self.leading = False
        self.ports: dict[str, int] = {}

    # -- wiring --------------------------------------------------------------------------
    def _group_controller(
        self, kind: GroupKind, management: JobManagement
    ) -> GroupWorkloadController:
        """The controller of a kind whose groups' Workloads are prebuilt (a LeaderWorkerSet),
        reading its Pods from the cache of its referenced Pods."""
        informers = self.informers
        (pods,) = referenced_resources(kind)
        return GroupWorkloadController(
            kind,
            JobActions(kind.resource, self.client, self.events),
            JobActions(pods, self.client, self.events),
            self.versions,
            self.host,
            jobs=informers.jobs[kind.framework].store,
            workloads=informers.workloads.store,
            pods=informers.referenced[pods].store,
            pod_priority_classes=informers.pod_priority_classes.store,
            workload_priority_values=self.cluster_feed.priority_values,
            build=management.build,
        )

    def _informer_for(self, kind: str) -> Cache:
        informers = self.informers
        return {
            "ResourceFlavor": informers.resource_flavors,
            "Cohort": informers.cohorts,
            "ClusterQueue": informers.cluster_queues,
            "LocalQueue": informers.local_queues,
            "WorkloadPriorityClass": informers.workload_priority_classes,
            "AdmissionCheck": informers.admission_checks,
            "Namespace": informers.namespaces,
            "LimitRange": informers.limit_ranges,
            "RuntimeClass": informers.runtime_classes,
            "Topology": informers.topologies,
            "Node": informers.nodes,
            "Pod": informers.occupying_pods,
        }[kind]

    def _register_handlers(self) -> None:
        for kind in self.cluster_feed.kinds:
            self._informer_for(kind).add_handlers(self.cluster_feed.handlers(kind))
        for kind in ("ClusterQueue", "ResourceFlavor", "AdmissionCheck"):
            self._informer_for(kind).add_handlers(self.finalizers.handlers(kind))
        self.informers.workload_priority_classes.add_handlers(self.priority_sync.handlers())
        # The engine first, so the Job controller reconciles against the updated engine.
        self.informers.workloads.add_handlers(self.workload_feed.handlers())
        for controller in self.job_controllers:
            self.informers.workloads.add_handlers(controller.workload_handlers())
        self.informers.workloads.add_handlers(self.finalizers.workload_handlers())
        if self.variants is not None:
            self.informers.workloads.add_handlers(self.variants.workload_handlers())
            self.informers.cluster_queues.add_handlers(self.variants.cluster_queue_handlers())
        self.informers.workloads.add_handlers(self.topology_ungater.workload_handlers())
        self.informers.admitted_pods.add_handlers(self.topology_ungater.pod_handlers())
        # After the engine's own handler, so a replacement sees the stored assignment.
        self.informers.workloads.add_handlers(self.node_failures.workload_handlers())
        self.informers.nodes.add_handlers(self.node_failures.node_handlers())
        self.informers.admitted_pods.add_handlers(self.node_failures.pod_handlers())
        for controller in self.job_controllers:
            self.informers.jobs[controller.kind.framework].add_handlers(controller.job_handlers())
            for resource in referenced_resources(controller.kind):
                self.informers.referenced[resource].add_handlers(
                    controller.referenced_handlers(resource)
                )

    def _workload_written(self, workload: Mapping[str, Any]) -> None:
        for controller in self.job_controllers:
            controller.workload_changed(workload)

    # -- state ---------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.not_ready_reason() is None

    def not_ready_reason(self) -> str | None:
        """Why /readyz fails, or None when this replica can take traffic."""
        if not self.informers.synced:
            return "informer caches not synced"
        if self.webhooks is not None and not self.webhooks.ready:
            return "webhook server not serving yet"
        return None

    # -- running -------------------------------------------------------------------------
    async def run(self) -> None:
        """Run until cancelled; raises LeadershipLost if this replica led and lost."""
        runners: list[web.AppRunner] = []
        try:
            await self._start_servers(runners)
            await self._leave_out_missing_job_kinds()
            async with asyncio.TaskGroup() as group:
                group.create_task(self.informers.run(), name="informers")
                await self._wait_synced()
                if self.webhooks is not None:
                    group.create_task(self._serve_webhooks(self.webhooks), name="webhooks")
                if self.leader_elect:
                    await self._campaign()
                    raise LeadershipLost(f"{self.identity} lost the Lease")
                await self._lead()
        except BaseExceptionGroup as group:
            # Surface the hub's own reasons to stop as themselves, not wrapped in a group.
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], ManagerStopped):
                raise group.exceptions[0] from None
            raise
        finally:
            self.log.info("hub.stopping")
            for runner in runners:
                with contextlib.suppress(Exception):
                    await runner.cleanup()

    async def _leave_out_missing_job_kinds(self) -> None:
        """An enabled job kind whose API the cluster does not serve (its CRD is not
        installed) is left out with a warning, so the other kinds and every queue still
        run; installing the CRD takes a restart to pick it up."""
        for controller in list(self.job_controllers):
            kind = controller.kind
            # A kind reading referenced objects (a TrainJob's runtimes) needs those too.
            for resource in (kind.resource, *referenced_resources(kind)):
                try:
                    await self.client.list(resource, limit=1)
                except NotFound:
                    self.log.warning(
                        "manager.job_kind_unavailable",
                        framework=kind.framework,
                        resource=f"{resource.plural}.{resource.group}",
                        hint=f"install the {resource.kind} CRD and restart to manage them",
                    )
                    self.job_controllers.remove(controller)
                    self.informers.jobs.pop(kind.framework, None)
                    break
        self.informers.drop_unreferenced(
            {r for c in self.job_controllers for r in referenced_resources(c.kind)}
        )

    async def _wait_synced(self) -> None:
        try:
            await self.informers.wait_synced(SYNC_TIMEOUT_SECONDS)
        except TimeoutError:
            raise CachesNotSynced(
                f"informer caches did not sync within {SYNC_TIMEOUT_SECONDS:.0f}s; "
                "are the kueue.x-k8s.io CRDs installed and readable?"
            ) from None
        self.log.info("hub.caches_synced")

    async def _serve_webhooks(self, webhooks: ManagerWebhooks) -> None:
        try:
            await webhooks.run()
        except Exception as error:
            raise WebhooksFailed(
                f"the admission webhooks stopped: {type(error).__name__}: {error} "
                "(run with --no-webhooks to go without them)"
            ) from error

    async def _campaign(self) -> None:
        election = self.configuration.leader_election
        elector = LeaderElector(
            self.client,
            LeaderElectionConfig(
                namespace=self.options.lease_namespace
                or election.resource_namespace
                or self.configuration.namespace,
                name=self.options.lease_name or election.resource_name,
                identity=self.identity,
                lease_duration_seconds=election.lease_duration_seconds,
                renew_deadline_seconds=election.renew_deadline_seconds,
                retry_period_seconds=election.retry_period_seconds,
            ),
            on_started_leading=self._lead,
            on_new_leader=lambda holder: self.log.info("hub.leader_observed", leader=holder),
        )
        await elector.run()

    async def _lead(self) -> None:
        """The leader's work: catch up, then decide and write until cancelled."""
        self.leading = True
        self.metrics.replica_role = "leader" if self.leader_elect else "standalone"
        self.log.info("hub.leading")
        try:
            if self.leader_elect:
                await catch_up_workloads(self.client, self.workload_feed)
            async with asyncio.TaskGroup() as group:
                group.create_task(self.scheduler.run(), name="scheduler")
                group.create_task(self.status_writer.run(), name="workload-status")
                group.create_task(self.queue_status.run(), name="queue-status")
                group.create_task(self.finalizers.run(), name="finalizers")
                group.create_task(self.priority_sync.run(), name="workload-priority")
                group.create_task(self.topology_ungater.run(), name="topology-ungater")
                group.create_task(self.node_failures.run(), name="tas-node-failures")
                if self.variants is not None:
                    group.create_task(self.variants.run(), name="concurrent-admission")
                for controller in self.job_controllers:
                    group.create_task(
                        controller.run(self.options.job_workers),
                        name=f"jobs-{controller.kind.framework}",
                    )
                group.create_task(self.events.run(), name="events")
                self._lead_extensions(group)
        finally:
            self.leading = False
            if self.leader_elect:
                self.metrics.replica_role = "follower"

    def _lead_extensions(self, group: asyncio.TaskGroup) -> None:
        """More leader-only work beside the manager's own (the hub adds MultiKueue)."""

    def _request_auth(self) -> RequestAuth | None:
        """Delegated authn/authz for guarded servers (the hub's; None: no server is)."""
        return None

    async def _start_extra_servers(
        self, runners: list[web.AppRunner], auth: RequestAuth | None
    ) -> None:
        """Servers beside probes and metrics (the hub adds the visibility API)."""

    async def _start_servers(self, runners: list[web.AppRunner]) -> None:
        config, options = self.configuration, self.options
        health = _port(options.health_port, config.health_probe_bind_address)
        metrics = _port(options.metrics_port, config.metrics_bind_address)
        if options.metrics_certificate is not None and metrics == health:
            raise ValueError("/metrics over TLS needs a port of its own, apart from the probes")
        auth = self._request_auth()
        if options.metrics_auth and auth is None:
            raise ValueError("/metrics authentication needs delegated auth (the hub has it)")
        if auth is not None:
            await auth.load_trust()
        apps: dict[int, web.Application] = {}
        for port in {p for p in (health, metrics) if p is not None}:
            guarded = port == metrics and auth is not None and options.metrics_auth
            middlewares = [auth.middleware(open_paths=PROBE_PATHS)] if guarded and auth else []
            apps[port] = web.Application(middlewares=middlewares)
        if health is not None:
            probe_routes(apps[health], self.not_ready_reason)
        if metrics is not None:
            metrics_routes(apps[metrics], self.metrics)
        for port, app in apps.items():  # the same port (even 0) serves both
            tls = None
            if port == metrics and options.metrics_certificate is not None:
                tls = server_context(options.metrics_certificate)
                if auth is not None:
                    auth.follow_trust(tls)
            runner = await serve(app, options.bind_host, port, ssl_context=tls)
            runners.append(runner)
            actual = bound_port(runner)
            if port == health:
                self.ports["health"] = actual
            if port == metrics:
                self.ports["metrics"] = actual
        await self._start_extra_servers(runners, auth)
        self.log.info("hub.serving", **self.ports)


def _version() -> str:
    try:
        return importlib.metadata.version("fleetq")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _port(option: int | None, bind_address: str) -> int | None:
    if option is None:
        return split_bind_address(bind_address)[1]
    return None if option < 0 else option
