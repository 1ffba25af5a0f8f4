"""The MultiKueue dispatch harness: the hub's dispatch on the lite fleet, the test playing
the manager's engine and the workers' Kueue.

`Fleet` runs the hub's `MultiKueueConnections` and `MultiKueueDispatch` in-process
against the manager, with a test namespace standing in for the hub namespace (its Secrets
hold the workers' kubeconfigs) and an origin of its own, so nothing another test left on
a worker is ever ours. No engine runs: the test plays it (a manager Workload owned by a
suspended MultiKueue Job, with QuotaReserved and the check Pending written by hand) and
plays each worker's Kueue by writing the copies' statuses, as upstream's integration
tests do. Cluster-scoped objects get unique names and are deleted after each test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import socket
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, NotFound
from core.kube.resources import JOBS, SECRETS, ResourceRef
from core.manager.configuration import Configuration, MultiKueueSettings
from core.manager.feature_gates import FeatureGates
from devfleet.cluster_access import ClusterAccess, RunningFleet
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.service import MultiKueueConnections
from hub.multikueue.connections.worker_connection import ConnectionSettings
from hub.multikueue.dispatch import DispatchSettings, MultiKueueDispatch
from tests.builders import (
    GPU,
    AdmissionCheck,
    ClusterQueue,
    FlavorQuotas,
    Job,
    LocalQueue,
    MultiKueueCluster,
    MultiKueueClusterSet,
    MultiKueueConfig,
    PodTemplate,
    ResourceFlavor,
    WorkerCapacity,
    Workload,
)
from tests.integration.polling import eventually

CLUSTERS = kind_info("MultiKueueCluster")
CONFIGS = kind_info("MultiKueueConfig")
CHECKS = kind_info("AdmissionCheck")
WORKLOADS = kind_info("Workload")
LOCAL_QUEUES = kind_info("LocalQueue")
CLUSTER_QUEUES = kind_info("ClusterQueue")
CAPACITIES = kind_info("WorkerCapacity")
CLUSTER_SETS = kind_info("MultiKueueClusterSet")
SET_LABEL = "fleetq.dev/test-cluster-set"
RESOURCE_FLAVORS = kind_info("ResourceFlavor")
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
CAPACITY_AWARE = "fleetq.dev/capacity-aware"
FAST = ConnectionSettings(
    backoff=ReconnectBackoff(base_seconds=0.3),
    probe_interval_seconds=0.5,
    probe_timeout_seconds=2.0,
    sync_timeout_seconds=20.0,
    connect_timeout_seconds=2.0,
)


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, reason: str = "", message: str = "", status: str = "True") -> Any:
    return {
        "type": type_,
        "status": status,
        "reason": reason or type_,
        "message": message,
        "lastTransitionTime": now_text(),
    }


def conditions_of(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def worker_kubeconfig(member: ClusterAccess, server: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(member.kubeconfig.read_text())
    if server is not None:
        for entry in document["clusters"]:
            entry["cluster"]["server"] = server
    return document


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pod_template(gpus: int = 0) -> PodTemplate:
    """One container asking for 1 CPU (and `gpus` GPUs, requested and limited)."""
    template = PodTemplate(image="registry.invalid/sleep").request("cpu", "1")
    if gpus:
        template.request(GPU, gpus).limit(GPU, gpus)
    return template


POD_TEMPLATE = pod_template().obj()


class Fleet:
    """The dispatch running against the lite fleet, and the test playing engine and workers."""

    def __init__(self, fleet: RunningFleet, manager: KubeClient, namespace: str) -> None:
        self.fleet = fleet
        self.manager = manager
        self.ns = namespace
        self.suffix = uuid.uuid4().hex[:6]
        self.origin = f"o-{self.suffix}"
        self.clusters = [f"w1-{self.suffix}", f"w2-{self.suffix}"]
        self.check = f"mk-{self.suffix}"
        self.workers: list[KubeClient] = []
        self.connections: MultiKueueConnections | None = None
        self.dispatch: MultiKueueDispatch | None = None
        self.metrics = CollectorRegistry()
        self._tasks: list[asyncio.Task[None]] = []
        self._dispatch_task: asyncio.Task[None] | None = None
        self._connections_task: asyncio.Task[None] | None = None
        self._dispatch_args: tuple[Configuration, DispatchSettings] | None = None
        self._cleanup: list[tuple[KubeClient, ResourceRef, str]] = []

    # -- set-up -----------------------------------------------------------------------

    async def open_workers(self) -> None:
        for member in self.fleet.workers:
            client = await KubeClient.from_kubeconfig(
                member.kubeconfig, name=member.name, qps=200, burst=400
            )
            self.workers.append(client)

    async def put_secret(self, index: int, server: str | None = None) -> None:
        document = worker_kubeconfig(self.fleet.workers[index], server)
        name = f"kubeconfig-{index}"
        data = {"kubeconfig": base64.b64encode(yaml.safe_dump(document).encode()).decode()}
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}
        try:
            await self.manager.create(SECRETS, body, namespace=self.ns)
        except AlreadyExists:
            await self.manager.replace(SECRETS, name, body, namespace=self.ns)

    async def create(self, client: KubeClient, resource: ResourceRef, body: dict[str, Any]) -> None:
        await client.create(resource, body)
        if not resource.namespaced:
            self._cleanup.append((client, resource, body["metadata"]["name"]))

    async def start(
        self,
        dispatcher: str,
        *,
        worker_lost_timeout: float = 30.0,
        nomination_timeout: float = 60.0,
        gc_interval: float = 1.0,
        config_clusters: Sequence[int] = (0, 1),
        frameworks: Sequence[str] | None = None,
        aliases_of_worker_0: Sequence[str] | None = None,
        quota_automation: bool = False,
    ) -> MultiKueueDispatch:
        """`aliases_of_worker_0` given: the check names a MultiKueueClusterSet instead of a
        MultiKueueConfig, selecting by label both workers' clusters and one more cluster of
        each name given, all reaching worker 0 (a big fleet at the price of two apiservers).
        """
        for index in range(2):
            await self.put_secret(index)
        if aliases_of_worker_0 is None:
            for index in range(2):
                worker = MultiKueueCluster(self.clusters[index]).kubeconfig(f"kubeconfig-{index}")
                await self.create(self.manager, CLUSTERS, worker.obj())
            config = MultiKueueConfig(self.check).clusters(
                *(self.clusters[i] for i in config_clusters)
            )
            await self.create(self.manager, CONFIGS, config.obj())
            check = AdmissionCheck(self.check).multikueue(self.check)
        else:
            secrets = [f"kubeconfig-{i}" for i in range(2)] + ["kubeconfig-0"] * len(
                aliases_of_worker_0
            )
            for name, secret in zip([*self.clusters, *aliases_of_worker_0], secrets, strict=True):
                member = MultiKueueCluster(name).label(SET_LABEL, self.suffix).kubeconfig(secret)
                await self.create(self.manager, CLUSTERS, member.obj())
            members = MultiKueueClusterSet(self.check).selector({SET_LABEL: self.suffix})
            await self.create(self.manager, CLUSTER_SETS, members.obj())
            check = AdmissionCheck(self.check).multikueue_set(self.check)
        await self.create(self.manager, CHECKS, check.obj())
        await self.queues()
        chosen: dict[str, Any] = {} if frameworks is None else {"frameworks": tuple(frameworks)}
        configuration = dataclasses.replace(
            Configuration(),
            **chosen,
            namespace=self.ns,
            feature_gates=FeatureGates(multikueue_quota_automation=quota_automation),
            multikueue=MultiKueueSettings(
                gc_interval_seconds=gc_interval,
                origin=self.origin,
                worker_lost_timeout_seconds=worker_lost_timeout,
                dispatcher_name=dispatcher,
            ),
        )
        settings = DispatchSettings.from_configuration(
            configuration, nomination_timeout_seconds=nomination_timeout
        )
        self._dispatch_args = (configuration, settings)
        self._start_connections()
        self.dispatch = self._new_dispatch()
        self._dispatch_task = asyncio.create_task(self.dispatch.run())
        self._tasks.append(self._dispatch_task)
        for index in range(2):
            await self.wait_connected(index)
        return self.dispatch

    async def start_connections_only(self) -> MultiKueueConnections:
        """The connections without dispatch: enough for clusters' and checks' conditions."""
        configuration = dataclasses.replace(
            Configuration(), namespace=self.ns, multikueue=MultiKueueSettings(origin=self.origin)
        )
        self._dispatch_args = (configuration, DispatchSettings.from_configuration(configuration))
        self._start_connections()
        connections = self.connections
        assert connections is not None

        async def synced() -> bool:
            for task in self._tasks:
                if task.done():
                    task.result()
            return connections.synced

        await eventually(synced, what="connection caches synced")
        return connections

    async def check_active(self, name: str) -> dict[str, Any] | None:
        """The Active condition of AdmissionCheck `name`, as the apiserver holds it."""
        return conditions_of(await self.manager.get(CHECKS, name)).get("Active")

    async def wait_check_active(
        self, name: str, reason: str, *, timeout: float = 30.0
    ) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            found = await self.check_active(name)
            return found if found is not None and found["reason"] == reason else None

        return await eventually(probe, timeout=timeout, what=f"check {name} Active {reason}")

    def _start_connections(self) -> None:
        assert self._dispatch_args is not None
        configuration, _ = self._dispatch_args
        self.connections = MultiKueueConnections(
            self.manager, configuration, settings=FAST, quota_resync_seconds=1.0
        )
        self._connections_task = asyncio.create_task(self.connections.run())
        self._tasks.append(self._connections_task)

    def _new_dispatch(self) -> MultiKueueDispatch:
        assert self.connections is not None and self._dispatch_args is not None
        configuration, settings = self._dispatch_args
        return MultiKueueDispatch(
            self.manager,
            configuration,
            self.connections.registry,
            settings=settings,
            metrics_registry=self.metrics,
        )

    async def restart_dispatch(self) -> None:
        """Stop the dispatch (a hub going away) and start a fresh one with empty memory."""
        assert self._dispatch_task is not None
        self._dispatch_task.cancel()
        await asyncio.gather(self._dispatch_task, return_exceptions=True)
        self._tasks = [task for task in self._tasks if not task.done()]
        self.metrics = CollectorRegistry()
        self.dispatch = self._new_dispatch()
        self._dispatch_task = asyncio.create_task(self.dispatch.run())
        self._tasks.append(self._dispatch_task)

    async def restart_hub(self) -> None:
        """Stop connections and dispatch (a hub process going away) and start fresh ones:
        no memory of earlier passes, outages or nominations survives."""
        assert self._dispatch_task is not None and self._connections_task is not None
        for task in (self._dispatch_task, self._connections_task):
            task.cancel()
        await asyncio.gather(self._dispatch_task, self._connections_task, return_exceptions=True)
        self._tasks = [task for task in self._tasks if not task.done()]
        self.metrics = CollectorRegistry()
        self._start_connections()
        self.dispatch = self._new_dispatch()
        self._dispatch_task = asyncio.create_task(self.dispatch.run())
        self._tasks.append(self._dispatch_task)

    async def queues(self) -> None:
        """A manager ClusterQueue with the check and its LocalQueue; LocalQueues on workers."""
        cq = f"cq-{self.suffix}"
        queue = (
            ClusterQueue(cq)
            .namespace_selector()
            .admission_checks(self.check)
            .resource_group(FlavorQuotas("default", {"cpu": 8}))
        )
        await self.create(self.manager, CLUSTER_QUEUES, queue.obj())
        for client in (self.manager, *self.workers):
            await client.create(LOCAL_QUEUES, LocalQueue("lq", self.ns).cluster_queue(cq).obj())

    async def cut_off(self, index: int) -> None:
        """Point worker `index`'s Secret at a closed port and wait until the hub notices."""
        await self.put_secret(index, server=f"https://127.0.0.1:{closed_port()}")

        async def lost() -> bool:
            return not self.connected(index)

        await eventually(lost, what=f"{self.clusters[index]} lost")

    async def reconnect(self, index: int) -> None:
        """Restore worker `index`'s Secret and wait until the hub is connected again."""
        await self.put_secret(index)
        await self.wait_connected(index)

    def connected(self, index: int) -> bool:
        assert self.connections is not None
        connection = self.connections.registry.connection(self.clusters[index])
        return connection is not None and connection.connected

    async def wait_connected(self, index: int, *, timeout: float = 30.0) -> None:
        async def probe() -> bool:
            for task in self._tasks:
                if task.done():
                    task.result()
            return self.connected(index)

        await eventually(probe, timeout=timeout, what=f"{self.clusters[index]} connected")

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for client, resource, name in reversed(self._cleanup):
            with contextlib.suppress(NotFound):
                await client.delete(resource, name)
        for client in self.workers:
            await client.close()

    # -- playing the manager's engine and job webhook ----------------------------------

    async def submit(self, name: str, *, gpus: int = 0) -> str:
        """A suspended MultiKueue Job and its Workload holding quota, check Pending."""
        template = pod_template(gpus)
        job = await self.manager.create(
            JOBS,
            Job(name, self.ns).queue("lq").suspend().managed_by().template(template).obj(),
        )
        workload_name = f"job-{name}-{self.suffix}"
        uid = job["metadata"]["uid"]
        workload = (
            Workload(workload_name, self.ns)
            .label("kueue.x-k8s.io/job-uid", uid)
            .owned_by_job(name, uid, block_owner_deletion=True)
            .queue("lq")
            .pod_set("main", 1, template=template)
        )
        await self.manager.create(WORKLOADS, workload.obj())
        await self.manager.patch(
            WORKLOADS,
            workload_name,
            {
                "status": {
                    "conditions": [condition("QuotaReserved", message="Quota reserved")],
                    "admission": self.admission(gpus),
                    "admissionChecks": [
                        {
                            "name": self.check,
                            "state": "Pending",
                            "message": "",
                            "lastTransitionTime": now_text(),
                        }
                    ],
                }
            },
            namespace=self.ns,
            subresource="status",
        )
        return workload_name

    def admission(self, gpus: int = 0) -> dict[str, Any]:
        usage: dict[str, Any] = {"cpu": "1"}
        if gpus:
            usage["nvidia.com/gpu"] = str(gpus)
        return {
            "clusterQueue": f"cq-{self.suffix}",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {resource: "default" for resource in usage},
                    "resourceUsage": usage,
                    "count": 1,
                }
            ],
        }

    async def local(self, name: str) -> dict[str, Any]:
        return await self.manager.get(WORKLOADS, name, namespace=self.ns)

    async def local_job(self, name: str) -> dict[str, Any]:
        return await self.manager.get(JOBS, name, namespace=self.ns)

    def check_state(self, workload: dict[str, Any]) -> dict[str, Any]:
        for entry in workload["status"].get("admissionChecks") or ():
            if entry["name"] == self.check:
                return dict(entry)
        raise AssertionError(f"no check {self.check} on {workload['metadata']['name']}")

    async def wait_check(self, name: str, state: str, *, timeout: float = 30.0) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            workload = await self.local(name)
            return workload if self.check_state(workload)["state"] == state else None

        return await eventually(probe, timeout=timeout, what=f"{name}: check {state}")

    # -- playing the workers' Kueue ----------------------------------------------------

    async def remote(self, index: int, name: str, resource: ResourceRef = WORKLOADS) -> Any:
        try:
            return await self.workers[index].get(resource, name, namespace=self.ns)
        except NotFound:
            return None

    async def wait_remote(self, index: int, name: str, resource: ResourceRef = WORKLOADS) -> Any:
        async def probe() -> Any:
            return await self.remote(index, name, resource)

        return await eventually(probe, what=f"{resource.plural} {name} on worker {index}")

    async def wait_gone(self, index: int, name: str, resource: ResourceRef = WORKLOADS) -> None:
        async def probe() -> bool:
            return await self.remote(index, name, resource) is None

        await eventually(probe, what=f"{resource.plural} {name} gone from worker {index}")

    async def admit_on(self, index: int, name: str) -> None:
        await self.workers[index].patch(
            WORKLOADS,
            name,
            {
                "status": {
                    "conditions": [
                        condition("QuotaReserved", message="reserved on the worker"),
                        condition("Admitted", message="admitted on the worker"),
                    ],
                    "admission": self.admission(),
                }
            },
            namespace=self.ns,
            subresource="status",
        )

    async def start_on(self, index: int, job_name: str) -> str:
        """Play worker `index`'s Kueue and Job controller: the Job starts, one pod running.
        Returns the start time written."""
        worker = self.workers[index]
        await worker.patch(JOBS, job_name, {"spec": {"suspend": False}}, namespace=self.ns)
        started = now_text()
        await worker.patch(
            JOBS,
            job_name,
            {"status": {"startTime": started, "active": 1, "ready": 1}},
            namespace=self.ns,
            subresource="status",
        )
        return started

    async def finish_on(
        self, index: int, job_name: str, workload_name: str, *, started: str | None = None
    ) -> None:
        """Play worker `index`'s Job controller and Kueue: the Job completes (started now
        unless `started` says when), then its Workload finishes."""
        worker = self.workers[index]
        if started is None:
            await worker.patch(JOBS, job_name, {"spec": {"suspend": False}}, namespace=self.ns)
            started = now_text()
        await worker.patch(
            JOBS,
            job_name,
            {
                "status": {
                    "startTime": started,
                    "completionTime": now_text(),
                    "active": 0,
                    "ready": 0,
                    "succeeded": 1,
                    "conditions": [
                        condition("SuccessCriteriaMet", reason="CompletionsReached"),
                        condition("Complete", reason="CompletionsReached"),
                    ],
                }
            },
            namespace=self.ns,
            subresource="status",
        )
        await worker.patch(
            WORKLOADS,
            workload_name,
            {
                "status": {
                    "conditions": [
                        condition("QuotaReserved"),
                        condition("Admitted"),
                        condition(
                            "Finished", reason="Succeeded", message="Job finished successfully"
                        ),
                    ]
                }
            },
            namespace=self.ns,
            subresource="status",
        )

    # -- playing the manager's engine after a Retry -------------------------------------

    async def release_for_retry(self, name: str) -> None:
        """The engine evicts a workload whose check asked for a Retry: quota released,
        check back to Pending."""
        local = await self.local(name)
        await self.manager.patch(
            WORKLOADS,
            name,
            {
                "status": {
                    "conditions": [
                        condition("QuotaReserved", status="False", reason="Pending"),
                        condition("Evicted", reason="AdmissionCheck", message="check Retry"),
                    ],
                    "admission": None,
                    "admissionChecks": [
                        dict(
                            self.check_state(local), state="Pending", lastTransitionTime=now_text()
                        )
                    ],
                }
            },
            namespace=self.ns,
            subresource="status",
        )

    async def wait_placement_forgotten(self, name: str) -> None:
        async def forgotten() -> bool:
            status = (await self.local(name))["status"]
            return not status.get("clusterName") and not status.get("nominatedClusterNames")

        await eventually(forgotten, what=f"{name}: clusterName and nominations cleared")

    async def reserve_again(self, name: str) -> None:
        """The engine reserves quota for the requeued workload in a later cycle."""
        await self.manager.patch(
            WORKLOADS,
            name,
            {
                "status": {
                    "conditions": [
                        condition("QuotaReserved", message="Quota reserved again"),
                        condition("Evicted", status="False", reason="QuotaReserved"),
                    ],
                    "admission": self.admission(),
                }
            },
            namespace=self.ns,
            subresource="status",
        )

    async def report_capacity(self, index: int, free_gpus: int) -> None:
        """A WorkerCapacity as the agent would write it: one GPU node, queue cq-<suffix>.

        The flavor it reports exists on the worker, as on a real one: the hub reads its
        node labels and taints to judge the fit.
        """
        name = self.clusters[index]
        with contextlib.suppress(AlreadyExists):  # shared by tests on this worker
            await self.workers[index].create(RESOURCE_FLAVORS, ResourceFlavor("default").obj())
        capacity = WorkerCapacity(name).cluster_name(name)
        await self.create(self.workers[index], CAPACITIES, capacity.obj())
        block = {"cpu": "32", "nvidia.com/gpu": str(free_gpus)}
        await self.workers[index].patch(
            CAPACITIES,
            name,
            {
                "status": {
                    "observedTime": now_text(),
                    "flavors": [
                        {
                            "name": "default",
                            "nodeCount": 1,
                            "allocatable": {"cpu": "32", "nvidia.com/gpu": "8"},
                            "free": block,
                            "largestFreeBlocks": [block],
                        }
                    ],
                    "clusterQueues": [
                        {
                            "name": f"cq-{self.suffix}",
                            "quota": [
                                {
                                    "name": "default",
                                    "resources": {"cpu": "32", "nvidia.com/gpu": "8"},
                                }
                            ],
                        }
                    ],
                    "conditions": [condition("Reporting", reason="Reporting")],
                }
            },
            subresource="status",
        )


async def admitted_on_one(mk: Fleet, name: str, index: int) -> dict[str, Any]:
    """Admit the copy on worker `index` and wait until the manager records the placement."""
    await mk.wait_remote(index, name)
    await mk.admit_on(index, name)
    return await mk.wait_check(name, "Ready")
