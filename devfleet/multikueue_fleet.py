"""A MultiKueue fleet on a running local fleet: queues, join, the hub and the agents, up and gone.

E2E tests, the demo and the benchmark all need the same thing: on a `RunningFleet`, the
CRDs installed, a manager ClusterQueue guarded by the MultiKueue AdmissionCheck, worker
ClusterQueues sized to the workers' kwok nodes (one ResourceFlavor per node pool,
selecting `fleetq.dev/node-pool`), the workers joined the way users join them
(`cli.join`, in process), `fleetq hub` on the manager and `fleetq agent` on each worker as
real processes with their logs in files, and everything Active before the first Job.
`MultiKueueFleet` does that and, on exit, stops the processes (SIGTERM, then SIGKILL) and
removes every object it created, so another fleet can follow on the same clusters.
The parts it stands on have modules of their own: `fleet_process` (a hub or agent as a
child process), `fleet_queues` (queues sized to the node pools), `fleet_crds`, `polling`
and `conditions`.

Every cluster-scoped name starts with `spec.name`, which is also the MultiKueue origin, so
two of them (or one and an upstream manager) never mistake each other's objects::

    spec = MultiKueueFleetSpec(name="mk-ab12", namespaces=("team-a",), workdir=tmp)
    with MultiKueueFleet(running_fleet, spec) as mk:
        # Jobs labelled kueue.x-k8s.io/queue-name=user-queue in team-a, created on the
        # manager, run on the workers.
        print(mk.cluster_queue, mk.cluster_names, mk.hub.log_path)

`hub_configuration` / `agent_configuration` are merged over the defaults (say
`{"multiKueue": {"workerLostTimeout": "20s"}}`), `hub_kubeconfig` / `agent_kubeconfigs`
choose the credentials each process runs with (default: the fleet's admin kubeconfigs).
Failure tests drive the processes with `stop_hub`, `kill_hub`, `restart_hub(config)` and
`start_agent`; tests sharing one fleet add namespaces with `add_namespace`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from core.api.json_types import JsonDict
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_objects import delete_webhook_configurations
from devfleet.conditions import is_true
from devfleet.fleet_crds import install_crds
from devfleet.fleet_process import FleetProcess
from devfleet.fleet_queues import GPU, POOL_LABEL, cluster_queue_manifest, node_pools
from devfleet.polling import until
from devfleet.ports import allocate_ports

Progress = Callable[[str], None]

KUEUE = ("kueue.x-k8s.io", "v1beta2")
FLEETQ = ("fleetq.dev", "v1alpha1")
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"


class MultiKueueFleetError(RuntimeError):
    """The MultiKueue fleet could not be brought up; the message says what and where."""


@dataclass(frozen=True, slots=True)
class MultiKueueFleetSpec:
    """What to set up. Only `name`, `namespaces` and `workdir` are usually given."""

    workdir: Path
    """Process logs, Configuration files and webhook certificates go here."""
    name: str = "mk"
    """Prefix of every cluster-scoped object and the MultiKueue origin (a DNS-1123 label)."""
    namespaces: tuple[str, ...] = ()
    """Namespaces with the LocalQueue on the manager and every worker (made when missing)."""
    local_queue: str = "user-queue"
    workers: tuple[str, ...] | None = None
    """Fleet workers to join, in dispatch order (default: all)."""
    agents: bool = True
    """Run `fleetq agent` on each worker (False: something else admits there)."""
    worker_queues: bool = True
    """Create worker flavors and ClusterQueues (False: whoever runs the worker does)."""
    hub_configuration: Mapping[str, Any] = field(default_factory=dict)
    agent_configuration: Mapping[str, Any] = field(default_factory=dict)
    hub_kubeconfig: Path | None = None
    agent_kubeconfigs: Mapping[str, Path] = field(default_factory=dict)
    """Worker name (the fleet's, e.g. worker-1) → kubeconfig its agent runs with."""
    manager_quota: Mapping[str, str] | None = None
    """Nominal quota of the manager ClusterQueue; default: the joined workers' total."""
    manager_preemption: Mapping[str, Any] | None = None
    worker_preemption: Mapping[str, Any] = field(
        default_factory=lambda: {"withinClusterQueue": "LowerPriority"}
    )
    hub_args: tuple[str, ...] = ()
    """Extra `fleetq hub` arguments."""
    dashboard: bool = False
    """Serve the hub's dashboard on a free loopback port (`hub_dashboard_url`)."""
    start_timeout_seconds: float = 120.0


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> JsonDict:
    """`override` laid over `base`, mappings merged key by key (a None value removes)."""
    out: JsonDict = dict(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class _Created:
    """One object this fleet made, so teardown can remove it."""

    cluster: ClusterAccess
    kind: str
    name: str
    namespace: str | None = None


class MultiKueueFleet:
    """See the module docstring. `start()`/`stop()` or use it as a context manager."""

    def __init__(
        self, fleet: RunningFleet, spec: MultiKueueFleetSpec, progress: Progress | None = None
    ) -> None:
        self.fleet = fleet
        self.spec = spec
        self.progress = progress or (lambda _: None)
        chosen = spec.workers or tuple(worker.name for worker in fleet.workers)
        self.workers: tuple[ClusterAccess, ...] = tuple(fleet.cluster(name) for name in chosen)
        self.hub_namespace = f"{spec.name}-system"
        self.identity_namespace = f"{spec.name}-identity"
        self.cluster_queue = spec.name
        self.manager_flavor = spec.name
        self.admission_check = spec.name
        self.config_name = spec.name
        self.origin = spec.name
        self.cluster_names = {w.name: f"{spec.name}-{w.name}" for w in self.workers}
        """Fleet worker name → its MultiKueueCluster (and WorkerCapacity) name."""
        self.worker_flavors: dict[str, list[str]] = {}
        """Fleet worker name → its flavors, one per node pool, in ClusterQueue order."""
        self.hub: FleetProcess | None = None
        self.agents: dict[str, FleetProcess] = {}
        self._created: list[_Created] = []
        self.workdir = spec.workdir
        self.hub_metrics_port = 0
        self.hub_dashboard_url = ""
        self._hub_overrides: JsonDict = {}
        self.agent_metrics_ports: dict[str, int] = {}

    # -- the context manager --------------------------------------------------------------
    def __enter__(self) -> MultiKueueFleet:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    # -- names ----------------------------------------------------------------------------
    def worker_by_cluster_name(self, cluster_name: str) -> ClusterAccess:
        for name, mkc in self.cluster_names.items():
            if mkc == cluster_name:
                return self.fleet.cluster(name)
        raise KeyError(cluster_name)

    def stop_hub(self) -> int | None:
        """Stop the hub cleanly (SIGTERM); its exit code (None if it had to be killed)."""
        return None if self.hub is None else self.hub.stop()

    def kill_hub(self) -> None:
        """SIGKILL the hub, as a crash would end it."""
        if self.hub is not None:
            self.hub.kill()

    def restart_hub(self, configuration: Mapping[str, Any] | None = None) -> FleetProcess:
        """Stop the hub and start it again, its Configuration overridden by `configuration`
        (laid over the spec's; None keeps the current one), and wait until ready."""
        self.stop_hub()
        if configuration is not None:
            self._hub_overrides = dict(configuration)
        hub = self.start_hub()
        self.wait_ready()
        return hub

    @property
    def hub_configuration(self) -> JsonDict:
        base: JsonDict = {
            "apiVersion": CONFIG_API_VERSION,
            "kind": "Configuration",
            "namespace": self.hub_namespace,
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"qps": 200, "burst": 400},
            "webhook": {"certDir": str(self.workdir / "hub-certs")},
            "multiKueue": {
                "origin": self.origin,
                "gcInterval": "10s",
                "workerLostTimeout": "5m",
                "dispatcherName": "fleetq.dev/capacity-aware",
            },
        }
        return merged(merged(base, self.spec.hub_configuration), self._hub_overrides)

    @property
    def agent_configuration(self) -> JsonDict:
        base: JsonDict = {
            "apiVersion": CONFIG_API_VERSION,
            "kind": "Configuration",
            "namespace": self.identity_namespace,
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"qps": 200, "burst": 400},
        }
        return merged(base, self.spec.agent_configuration)

    # -- up ---------------------------------------------------------------------------------
    def start(self) -> None:
        started = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        for member in (self.fleet.manager, *self.workers):
            install_crds(member)
        self.progress(f"{self.spec.name}: CRDs established")
        self._make_namespaces()
        capacity = self._make_worker_queues() if self.spec.worker_queues else {}
        self._make_manager_queues(capacity)
        self._join()
        self.progress(f"{self.spec.name}: workers joined")
        if self.spec.agents:
            for worker in self.workers:
                self.start_agent(worker.name)
        self.start_hub()
        self.wait_ready()
        self.progress(f"{self.spec.name}: ready in {time.monotonic() - started:.1f}s")

    def start_hub(self) -> FleetProcess:
        """Start (or start again) `fleetq hub` on the manager."""
        if self.hub is not None and self.hub.running:
            return self.hub
        config = self.workdir / "hub-config.yaml"
        config.write_text(yaml.safe_dump(self.hub_configuration))
        health, metrics, webhook = allocate_ports(3)
        self.hub_metrics_port = metrics
        kubeconfig = self.spec.hub_kubeconfig or self.fleet.manager.kubeconfig
        args = [
            *("hub", "--config", str(config), "--kubeconfig", str(kubeconfig)),
            *("--health-port", str(health), "--metrics-port", str(metrics)),
            *("--webhook-url-host", "127.0.0.1", "--webhook-port", str(webhook)),
            *self._dashboard_args(),
            *self.spec.hub_args,
        ]
        self.hub = FleetProcess("fleetq hub", args, self.workdir / "hub.log", health)
        self.hub.start()
        return self.hub

    def _dashboard_args(self) -> list[str]:
        if not self.spec.dashboard:
            return []
        (port,) = allocate_ports(1)
        self.hub_dashboard_url = f"http://127.0.0.1:{port}/"
        return ["--dashboard-port", str(port)]

    def start_agent(self, worker: str) -> FleetProcess:
        """Start (or start again) `fleetq agent` on one fleet worker."""
        current = self.agents.get(worker)
        if current is not None and current.running:
            return current
        config = self.workdir / f"agent-{worker}-config.yaml"
        config.write_text(yaml.safe_dump(self.agent_configuration))
        health, metrics = allocate_ports(2)
        self.agent_metrics_ports[worker] = metrics
        kubeconfig = (
            self.spec.agent_kubeconfigs.get(worker) or self.fleet.cluster(worker).kubeconfig
        )
        args = [
            *("agent", "--config", str(config), "--kubeconfig", str(kubeconfig)),
            *("--cluster-name", self.cluster_names[worker]),
            *("--health-port", str(health), "--metrics-port", str(metrics)),
        ]
        log = self.workdir / f"agent-{worker}.log"
        process = FleetProcess(f"fleetq agent on {worker}", args, log, health)
        process.start()
        self.agents[worker] = process
        return process

    def wait_ready(self, timeout: float | None = None) -> None:
        """Processes ready, every MultiKueueCluster Active, reports present, manager CQ Active."""
        limit = timeout or self.spec.start_timeout_seconds
        deadline = time.monotonic() + limit

        def left() -> float:
            return max(1.0, deadline - time.monotonic())

        for process in self._processes():
            until(process.ready, f"{process.label} ready", left())
        with self.fleet.manager.api_client() as api_client:
            custom = _custom(api_client)
            waits = [("multikueueclusters", mkc) for mkc in self.cluster_names.values()]
            waits.append(("clusterqueues", self.cluster_queue))
            for plural, name in waits:
                until(
                    functools.partial(self._active, custom, plural, name),
                    f"{plural} {name} Active on the manager",
                    left(),
                )
        if self.spec.agents:
            for worker in self.workers:
                with worker.api_client() as api_client:
                    name = self.cluster_names[worker.name]
                    until(
                        functools.partial(_reported_flavors, _custom(api_client), name),
                        f"WorkerCapacity {name} on {worker.name}",
                        left(),
                    )

    def _active(self, custom: Any, plural: str, name: str) -> bool:
        return is_true(_get_cluster(custom, plural, name), "Active") or self._hub_alive()

    def _hub_alive(self) -> bool:
        """False, or raise if the hub died (so a wait fails at once, with its log)."""
        if self.hub is not None and self.hub.process is not None and not self.hub.running:
            raise MultiKueueFleetError(f"the hub exited:\n{self.hub.log_tail()}")
        return False

    def _processes(self) -> list[FleetProcess]:
        return [p for p in (self.hub, *self.agents.values()) if p is not None]

    # -- objects ----------------------------------------------------------------------------
    def _make_namespaces(self) -> None:
        from kubernetes import client

        for member in (self.fleet.manager, *self.workers):
            with member.api_client() as api_client:
                core = client.CoreV1Api(api_client)
                for namespace in self.spec.namespaces:
                    try:
                        core.create_namespace({"metadata": {"name": namespace}})
                    except client.ApiException as error:
                        if error.status != 409:
                            raise
                        continue
                    self._created.append(_Created(member, "Namespace", namespace))

    def _make_worker_queues(self) -> dict[str, Fraction]:
        """Per worker, a flavor per node pool and a ClusterQueue of all its nodes; the total."""
        total: dict[str, Fraction] = {}
        for worker in self.workers:
            pools = node_pools(worker)
            if not pools:
                raise MultiKueueFleetError(f"{worker.name} has no nodes labelled {POOL_LABEL}")
            # CPU-only pools first, so jobs that need no GPU leave GPU nodes to those that do.
            order = sorted(pools, key=lambda pool: (pools[pool].get(GPU, 0) > 0, pool))
            flavors = []
            with worker.api_client() as api_client:
                custom = _custom(api_client)
                for pool in order:
                    flavor = f"{self.spec.name}-{pool}"
                    flavors.append(flavor)
                    self._apply(
                        worker,
                        custom,
                        "resourceflavors",
                        {
                            "kind": "ResourceFlavor",
                            "metadata": {"name": flavor},
                            "spec": {"nodeLabels": {POOL_LABEL: pool}},
                        },
                    )
                    for resource, amount in pools[pool].items():
                        total[resource] = total.get(resource, Fraction(0)) + amount
                self._apply(
                    worker,
                    custom,
                    "clusterqueues",
                    cluster_queue_manifest(
                        self.cluster_queue,
                        [(f"{self.spec.name}-{pool}", pools[pool]) for pool in order],
                        preemption=self.spec.worker_preemption,
                    ),
                )
            self.worker_flavors[worker.name] = flavors
        return total

    def _make_manager_queues(self, capacity: Mapping[str, Fraction]) -> None:
        from core.api.quantity import parse_quantity

        quota = (
            {r: parse_quantity(v) for r, v in self.spec.manager_quota.items()}
            if self.spec.manager_quota is not None
            else dict(capacity)
        )
        if not quota:
            raise MultiKueueFleetError("no manager quota: give manager_quota or worker_queues")
        manager = self.fleet.manager
        with manager.api_client() as api_client:
            custom = _custom(api_client)
            self._apply(
                manager,
                custom,
                "resourceflavors",
                {"kind": "ResourceFlavor", "metadata": {"name": self.manager_flavor}},
            )
            self._apply(
                manager,
                custom,
                "clusterqueues",
                cluster_queue_manifest(
                    self.cluster_queue,
                    [(self.manager_flavor, quota)],
                    preemption=self.spec.manager_preemption,
                    admission_checks=(self.admission_check,),
                ),
            )
            for namespace in self.spec.namespaces:
                self._apply(manager, custom, "localqueues", self.local_queue_manifest(namespace))

    def add_namespace(self, namespace: str) -> None:
        """Another namespace that dispatches: made on every cluster, the LocalQueue in each.

        For a fleet shared by tests that each want namespaces of their own; undo it with
        `remove_namespace`.
        """
        from kubernetes import client

        for member in (self.fleet.manager, *self.workers):
            with member.api_client() as api_client:
                with contextlib.suppress(client.ApiException):
                    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": namespace}})
                _custom(api_client).create_namespaced_custom_object(
                    *KUEUE, namespace, "localqueues", self.local_queue_manifest(namespace)
                )

    def remove_namespace(self, namespace: str) -> None:
        """Delete the namespace's Jobs on the manager, its LocalQueues and the namespace.

        Best effort, on every cluster. The Jobs go first and one by one: an API-only manager
        has no garbage collector or namespace controller, so only the hub (seeing each
        Job go) removes their Workloads and, through them, the workers' copies.
        """
        from kubernetes import client

        with (
            contextlib.suppress(Exception),
            self.fleet.manager.api_client() as api_client,
        ):
            batch = client.BatchV1Api(api_client)
            for job in batch.list_namespaced_job(namespace).items:
                with contextlib.suppress(client.ApiException):
                    batch.delete_namespaced_job(
                        job.metadata.name, namespace, propagation_policy="Background"
                    )
        for member in (self.fleet.manager, *self.workers):
            with contextlib.suppress(Exception):
                _delete(_Created(member, "localqueues", self.spec.local_queue, namespace))
            with contextlib.suppress(Exception):
                _delete(_Created(member, "Namespace", namespace))

    def local_queue_manifest(self, namespace: str) -> JsonDict:
        return {
            "apiVersion": "/".join(KUEUE),
            "kind": "LocalQueue",
            "metadata": {"name": self.spec.local_queue, "namespace": namespace},
            "spec": {"clusterQueue": self.cluster_queue},
        }

    def _apply(self, member: ClusterAccess, custom: Any, plural: str, body: JsonDict) -> None:
        """Create a kueue.x-k8s.io object, or update the spec of the one already there."""
        from kubernetes import client

        body = {"apiVersion": "/".join(KUEUE), **body}
        name, namespace = body["metadata"]["name"], body["metadata"].get("namespace")
        try:
            if namespace:
                custom.create_namespaced_custom_object(*KUEUE, namespace, plural, body)
            else:
                custom.create_cluster_custom_object(*KUEUE, plural, body)
        except client.ApiException as error:
            if error.status != 409:
                raise
            patch = {"spec": body.get("spec") or {}}
            if namespace:
                custom.patch_namespaced_custom_object(*KUEUE, namespace, plural, name, patch)
            else:
                custom.patch_cluster_custom_object(*KUEUE, plural, name, patch)
        self._created.append(_Created(member, plural, name, namespace))

    def fleet_file(self) -> Any:
        """The fleet file `fleetq join` would read for this fleet (a `FleetFile`)."""
        from cli.join.fleet_file import (
            ClusterRef,
            DispatchConfig,
            DispatchSpec,
            FleetFile,
            IdentitySpec,
            ManagerSpec,
            MirroredNamespace,
            MirroredQueue,
            WorkerSpec,
        )

        mk = self.hub_configuration.get("multiKueue") or {}
        names = tuple(self.cluster_names[w.name] for w in self.workers)
        return FleetFile(
            path=self.workdir / "clusters.yaml",
            manager=ManagerSpec(
                ClusterRef(kubeconfig=self.fleet.manager.kubeconfig), self.hub_namespace
            ),
            workers=tuple(
                WorkerSpec(
                    self.cluster_names[w.name],
                    ClusterRef(kubeconfig=w.kubeconfig),
                    f"{self.cluster_names[w.name]}-kubeconfig",
                )
                for w in self.workers
            ),
            identity=IdentitySpec(
                namespace=self.identity_namespace,
                service_account="multikueue",
                token_lifetime_seconds=6 * 3600,
                rotate_before_seconds=600,
            ),
            mirror=tuple(
                MirroredNamespace(
                    namespace, (MirroredQueue(self.spec.local_queue, self.cluster_queue),)
                )
                for namespace in self.spec.namespaces
            ),
            dispatch=DispatchSpec(
                dispatcher=str(mk.get("dispatcherName") or "fleetq.dev/capacity-aware"),
                configs=(DispatchConfig(self.config_name, self.admission_check, names),),
            ),
        )

    def _join(self) -> None:
        from cli.join.join_run import JoinOptions, run_join

        fleet_file = self.fleet_file()
        # What join makes, recorded before it runs, so a join failing half-way is undone.
        manager = self.fleet.manager
        self._created.append(_Created(manager, "Namespace", self.hub_namespace))
        for worker in self.workers:
            self._created.append(_Created(worker, "Namespace", self.identity_namespace))
            role = fleet_file.identity.role_name
            self._created.append(_Created(worker, "ClusterRoleBinding", role))
            self._created.append(_Created(worker, "ClusterRole", role))
            for namespace in self.spec.namespaces:
                self._created.append(
                    _Created(worker, "localqueues", self.spec.local_queue, namespace)
                )
            mkc = self.cluster_names[worker.name]
            self._created.append(_Created(manager, "multikueueclusters", mkc))
        self._created.append(_Created(manager, "multikueueconfigs", self.config_name))
        self._created.append(_Created(manager, "admissionchecks", self.admission_check))
        report = run_join(fleet_file, JoinOptions())
        if not report.ok:
            problems = "; ".join(notice.text for notice in report.errors)
            raise MultiKueueFleetError(f"join failed: {problems}")

    # -- down -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the processes, then remove every object made (best effort, never raises)."""
        for process in self._processes():
            with contextlib.suppress(Exception):
                process.stop()
        if self.hub is not None:
            # A hub that had to be killed leaves its webhook configurations behind.
            with contextlib.suppress(Exception):
                delete_webhook_configurations(self.fleet.manager)
        for worker in self.workers:
            with contextlib.suppress(Exception), worker.api_client() as api_client:
                _custom(api_client).delete_cluster_custom_object(
                    *FLEETQ, "workercapacities", self.cluster_names[worker.name]
                )
        for created in reversed(self._created):
            with contextlib.suppress(Exception):
                _delete(created)
        self._created.clear()


# -- helpers over the kubernetes client ----------------------------------------------------
def _custom(api_client: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


def _get_cluster(
    custom: Any, plural: str, name: str, group: tuple[str, str] = KUEUE
) -> JsonDict | None:
    from kubernetes import client

    try:
        found: JsonDict = custom.get_cluster_custom_object(*group, plural, name)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def _reported_flavors(custom: Any, name: str) -> list[JsonDict] | None:
    report = _get_cluster(custom, "workercapacities", name, FLEETQ) or {}
    flavors: list[JsonDict] | None = (report.get("status") or {}).get("flavors")
    return flavors


def _delete(created: _Created) -> None:
    from kubernetes import client

    with created.cluster.api_client() as api_client:
        if created.kind == "Namespace":
            client.CoreV1Api(api_client).delete_namespace(created.name)
            return
        rbac = client.RbacAuthorizationV1Api(api_client)
        if created.kind == "ClusterRole":
            rbac.delete_cluster_role(created.name)
            return
        if created.kind == "ClusterRoleBinding":
            rbac.delete_cluster_role_binding(created.name)
            return
        custom = _custom(api_client)
        no_finalizers = {"metadata": {"finalizers": None}}
        if created.namespace:
            with contextlib.suppress(client.ApiException):
                custom.patch_namespaced_custom_object(
                    *KUEUE, created.namespace, created.kind, created.name, no_finalizers
                )
            custom.delete_namespaced_custom_object(
                *KUEUE, created.namespace, created.kind, created.name
            )
        else:
            with contextlib.suppress(client.ApiException):
                custom.patch_cluster_custom_object(
                    *KUEUE, created.kind, created.name, no_finalizers
                )
            custom.delete_cluster_custom_object(*KUEUE, created.kind, created.name)


@contextlib.contextmanager
def multikueue_fleet(
    fleet: RunningFleet, spec: MultiKueueFleetSpec, progress: Progress | None = None
) -> Iterator[MultiKueueFleet]:
    """`with multikueue_fleet(running, spec) as mk:` — up on entry, gone on exit."""
    with MultiKueueFleet(fleet, spec, progress) as mk:
        yield mk
