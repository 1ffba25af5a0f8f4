"""MultiKueue dispatch on real apiservers: the lite fleet's manager and its two workers.

Each test runs the hub's `MultiKueueConnections` and `MultiKueueDispatch` in-process
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
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
import yaml
from prometheus_client import CollectorRegistry

from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, NotFound
from core.kube.resources import JOBS, SECRETS, ResourceRef
from devfleet.cluster_access import ClusterAccess, RunningFleet
from hub.configuration import Configuration, MultiKueueSettings
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.service import MultiKueueConnections
from hub.multikueue.connections.worker_connection import ConnectionSettings
from hub.multikueue.dispatch import DispatchSettings, MultiKueueDispatch

pytestmark = pytest.mark.asyncio(loop_scope="session")

T = TypeVar("T")
CLUSTERS = kind_info("MultiKueueCluster")
CONFIGS = kind_info("MultiKueueConfig")
CHECKS = kind_info("AdmissionCheck")
WORKLOADS = kind_info("Workload")
LOCAL_QUEUES = kind_info("LocalQueue")
CLUSTER_QUEUES = kind_info("ClusterQueue")
CAPACITIES = kind_info("WorkerCapacity")
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


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 30.0, what: str = ""
) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last={last!r}")


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


POD_TEMPLATE = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "c",
                "image": "registry.invalid/sleep",
                "resources": {"requests": {"cpu": "1"}},
            }
        ],
    }
}


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
    ) -> MultiKueueDispatch:
        for index in range(2):
            await self.put_secret(index)
            await self.create(
                self.manager,
                CLUSTERS,
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "MultiKueueCluster",
                    "metadata": {"name": self.clusters[index]},
                    "spec": {"clusterSource": {"kubeConfig": {"location": f"kubeconfig-{index}"}}},
                },
            )
        await self.create(
            self.manager,
            CONFIGS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueConfig",
                "metadata": {"name": self.check},
                "spec": {"clusters": self.clusters},
            },
        )
        await self.create(
            self.manager,
            CHECKS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "AdmissionCheck",
                "metadata": {"name": self.check},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/multikueue",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": self.check,
                    },
                },
            },
        )
        await self.queues()
        configuration = dataclasses.replace(
            Configuration(),
            namespace=self.ns,
            multikueue=MultiKueueSettings(
                gc_interval_seconds=gc_interval,
                origin=self.origin,
                worker_lost_timeout_seconds=worker_lost_timeout,
                dispatcher_name=dispatcher,
            ),
        )
        self.connections = MultiKueueConnections(self.manager, configuration, settings=FAST)
        self._tasks.append(asyncio.create_task(self.connections.run()))
        settings = DispatchSettings.from_configuration(
            configuration, nomination_timeout_seconds=nomination_timeout
        )
        self._dispatch_args = (configuration, settings)
        self.dispatch = self._new_dispatch()
        self._dispatch_task = asyncio.create_task(self.dispatch.run())
        self._tasks.append(self._dispatch_task)
        for index in range(2):
            await self.wait_connected(index)
        return self.dispatch

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
        self.metrics = CollectorRegistry()
        self.dispatch = self._new_dispatch()
        self._dispatch_task = asyncio.create_task(self.dispatch.run())
        self._tasks.append(self._dispatch_task)

    async def queues(self) -> None:
        """A manager ClusterQueue with the check and its LocalQueue; LocalQueues on workers."""
        cq = f"cq-{self.suffix}"
        await self.create(
            self.manager,
            CLUSTER_QUEUES,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": cq},
                "spec": {
                    "namespaceSelector": {},
                    "admissionChecksStrategy": {"admissionChecks": [{"name": self.check}]},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "default",
                                    "resources": [{"name": "cpu", "nominalQuota": 8}],
                                }
                            ],
                        }
                    ],
                },
            },
        )
        for client in (self.manager, *self.workers):
            await client.create(
                LOCAL_QUEUES,
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": "lq", "namespace": self.ns},
                    "spec": {"clusterQueue": cq},
                },
            )

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
        template = yaml.safe_load(yaml.safe_dump(POD_TEMPLATE))
        if gpus:
            resources = template["spec"]["containers"][0]["resources"]
            resources["requests"]["nvidia.com/gpu"] = gpus
            resources["limits"] = {"nvidia.com/gpu": gpus}
        job = await self.manager.create(
            JOBS,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": self.ns,
                    "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                },
                "spec": {
                    "suspend": True,
                    "managedBy": "kueue.x-k8s.io/multikueue",
                    "template": template,
                },
            },
        )
        workload_name = f"job-{name}-{self.suffix}"
        await self.manager.create(
            WORKLOADS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": workload_name,
                    "namespace": self.ns,
                    "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": name,
                            "uid": job["metadata"]["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "queueName": "lq",
                    "podSets": [{"name": "main", "count": 1, "template": template}],
                },
            },
        )
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

    async def report_capacity(self, index: int, free_gpus: int) -> None:
        """A WorkerCapacity as the agent would write it: one GPU node, queue cq-<suffix>.

        The flavor it reports exists on the worker, as on a real one: the hub reads its
        node labels and taints to judge the fit.
        """
        name = self.clusters[index]
        with contextlib.suppress(AlreadyExists):  # shared by tests on this worker
            await self.workers[index].create(
                RESOURCE_FLAVORS,
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "ResourceFlavor",
                    "metadata": {"name": "default"},
                },
            )
        await self.create(
            self.workers[index],
            CAPACITIES,
            {
                "apiVersion": "fleetq.dev/v1alpha1",
                "kind": "WorkerCapacity",
                "metadata": {"name": name},
                "spec": {"clusterName": name},
            },
        )
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


@pytest.fixture
async def mk(kueue_crds: RunningFleet, namespace: str) -> AsyncIterator[Fleet]:
    manager = await KubeClient.from_kubeconfig(
        kueue_crds.manager.kubeconfig, name=kueue_crds.manager.name, qps=200, burst=400
    )
    harness = Fleet(kueue_crds, manager, namespace)
    await harness.open_workers()
    try:
        yield harness
    finally:
        await harness.stop()
        await manager.close()


async def admitted_on_one(mk: Fleet, name: str, index: int) -> dict[str, Any]:
    """Admit the copy on worker `index` and wait until the manager records the placement."""
    await mk.wait_remote(index, name)
    await mk.admit_on(index, name)
    return await mk.wait_check(name, "Ready")


# -- tests ---------------------------------------------------------------------------------


async def test_all_at_once_copies_everywhere_and_the_first_admission_wins(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("race")
    copies = [await mk.wait_remote(0, name), await mk.wait_remote(1, name)]
    local = await mk.local(name)
    for copy in copies:
        assert copy["metadata"]["labels"][ORIGIN_LABEL] == mk.origin
        assert not copy["metadata"].get("ownerReferences")
        assert copy["spec"]["podSets"] == local["spec"]["podSets"]
        assert not (copy.get("status") or {}).get("conditions")
    assert sorted(local["status"]["nominatedClusterNames"]) == sorted(mk.clusters)

    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    check = mk.check_state(local)
    assert check["message"] == f'The workload was admitted on "{mk.clusters[1]}"'
    assert local["status"]["clusterName"] == mk.clusters[1]
    assert not local["status"].get("nominatedClusterNames")
    await mk.wait_gone(0, name)

    remote_job = await mk.wait_remote(1, "race", JOBS)
    labels = remote_job["metadata"]["labels"]
    assert (labels[ORIGIN_LABEL], labels[PREBUILT_LABEL]) == (mk.origin, name)
    assert remote_job["spec"]["suspend"] is True and not remote_job["spec"].get("managedBy")
    assert await mk.remote(0, "race", JOBS) is None
    exposition = mk.metrics.get_sample_value(
        "multikueue_workloads_admitted_total",
        {"cluster_queue": f"cq-{mk.suffix}", "cluster": mk.clusters[1], "replica_role": "leader"},
    )
    assert exposition == 1.0
    latencies = mk.metrics.get_sample_value(
        "fleetq_multikueue_dispatch_latency_seconds_count",
        {"cluster": mk.clusters[1], "replica_role": "leader"},
    )
    assert latencies == 1.0


async def test_capacity_aware_sends_one_copy_to_the_worker_whose_report_fits(mk: Fleet) -> None:
    await mk.report_capacity(0, free_gpus=2)
    await mk.report_capacity(1, free_gpus=8)
    await mk.start(CAPACITY_AWARE)
    name = await mk.submit("gpu", gpus=4)
    await mk.wait_remote(1, name)
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[1]]
    await asyncio.sleep(1.0)  # a copy on the other worker would have arrived by now
    assert await mk.remote(0, name) is None

    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[1]
    writes = mk.metrics.get_sample_value(
        "fleetq_multikueue_remote_writes_per_dispatch_sum", {"replica_role": "leader"}
    )
    assert writes == 2.0  # one copy created, one job created: nothing raced, nothing removed


async def test_capacity_aware_without_reports_tries_one_worker_at_a_time(mk: Fleet) -> None:
    await mk.start(CAPACITY_AWARE, nomination_timeout=3.0)
    name = await mk.submit("fallback")
    await mk.wait_remote(0, name)
    assert await mk.remote(1, name) is None
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[0]]

    # Worker 1 does not admit in time: its copy goes, then worker 2 gets one.
    await mk.wait_gone(0, name)
    await mk.wait_remote(1, name)
    assert await mk.remote(0, name) is None
    await mk.admit_on(1, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[1]


async def test_the_job_runs_on_the_worker_and_its_status_and_end_come_back(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("runs")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    remote_job = await mk.wait_remote(0, "runs", JOBS)
    await mk.wait_gone(1, name)

    # The manager's Job controller starts the local Job; the worker's Kueue the remote one.
    await mk.manager.patch(JOBS, "runs", {"spec": {"suspend": False}}, namespace=mk.ns)
    worker = mk.workers[0]
    await worker.patch(JOBS, "runs", {"spec": {"suspend": False}}, namespace=mk.ns)
    started = now_text()
    await worker.patch(
        JOBS,
        "runs",
        {"status": {"startTime": started, "active": 1, "ready": 1}},
        namespace=mk.ns,
        subresource="status",
    )

    async def running() -> dict[str, Any] | None:
        job = await mk.local_job("runs")
        return job if (job.get("status") or {}).get("active") == 1 else None

    local_job = await eventually(running, what="remote Job status copied to the manager's Job")
    assert local_job["status"]["startTime"] == started

    done = now_text()
    await worker.patch(
        JOBS,
        "runs",
        {
            "status": {
                "startTime": started,
                "completionTime": done,
                "active": 0,
                "ready": 0,
                "succeeded": 1,
                "conditions": [
                    condition("SuccessCriteriaMet", reason="CompletionsReached"),
                    condition("Complete", reason="CompletionsReached"),
                ],
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    await worker.patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved"),
                    condition("Admitted"),
                    condition("Finished", reason="Succeeded", message="Job finished successfully"),
                ]
            }
        },
        namespace=mk.ns,
        subresource="status",
    )

    async def finished() -> dict[str, Any] | None:
        workload = await mk.local(name)
        return conditions_of(workload).get("Finished")

    done_condition = await eventually(finished, what="the manager Workload finished")
    assert (done_condition["status"], done_condition["reason"], done_condition["message"]) == (
        "True",
        "Succeeded",
        "Job finished successfully",
    )
    local_job = await mk.local_job("runs")
    assert local_job["status"]["succeeded"] == 1
    assert {c["type"] for c in local_job["status"]["conditions"]} >= {"Complete"}
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "runs", JOBS)
    assert remote_job["metadata"]["uid"]  # it was ours, and it is gone
    assert (await mk.local(name))["status"]["clusterName"] == mk.clusters[0]


async def test_eviction_on_the_worker_asks_for_a_retry_and_the_copies_go(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("evicted")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    await mk.wait_remote(0, "evicted", JOBS)

    await mk.workers[0].patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved", status="False", reason="Pending"),
                    condition("Admitted", status="False", reason="NoReservation"),
                    condition("Evicted", reason="Preempted", message="Preempted by a job"),
                ],
                "admission": None,
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    local = await mk.wait_check(name, "Retry")
    assert mk.check_state(local)["message"] == (
        f'Workload evicted on worker cluster: "{mk.clusters[0]}", resetting for re-admission.'
        ' Previously: "Ready"'
    )
    # The engine evicts on the manager and releases the quota: copies and placement go.
    await mk.manager.patch(
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
                    dict(mk.check_state(local), state="Pending", lastTransitionTime=now_text())
                ],
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "evicted", JOBS)

    async def placement_cleared() -> bool:
        status = (await mk.local(name))["status"]
        return not status.get("clusterName") and not status.get("nominatedClusterNames")

    await eventually(placement_cleared, what="clusterName and nominations cleared")


async def test_a_lost_admitting_worker_is_retried_after_the_timeout(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=3.0)
    name = await mk.submit("lost")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)

    await mk.put_secret(0, server=f"https://127.0.0.1:{closed_port()}")
    lost_at = time.monotonic()
    local = await mk.wait_check(name, "Retry")
    assert time.monotonic() - lost_at >= 2.5  # kept Ready while within the timeout
    assert mk.check_state(local)["message"] == "Admitting remote lost"
    connected = mk.metrics.get_sample_value(
        "fleetq_multikueue_worker_connected",
        {"cluster": mk.clusters[0], "replica_role": "leader"},
    )
    assert connected == 0.0


async def test_a_brief_outage_does_not_evict(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=20.0)
    name = await mk.submit("brief")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    remote = await mk.wait_remote(0, name)

    await mk.put_secret(0, server=f"https://127.0.0.1:{closed_port()}")

    async def lost() -> bool:
        return not mk.connected(0)

    await eventually(lost, what="worker 1 lost")
    await asyncio.sleep(1.0)
    await mk.put_secret(0)
    await mk.wait_connected(0)
    await asyncio.sleep(2.0)  # passes after the reconnection see the copy still admitted

    local = await mk.local(name)
    assert mk.check_state(local)["state"] == "Ready"
    assert local["status"]["clusterName"] == mk.clusters[0]
    again = await mk.remote(0, name)
    assert again is not None and again["metadata"]["uid"] == remote["metadata"]["uid"]


async def test_garbage_collection_removes_only_our_orphans(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, gc_interval=1.0)
    worker = mk.workers[0]
    orphan_labels = {ORIGIN_LABEL: mk.origin}
    for workload_name, labels in (("orphan", orphan_labels), ("not-ours", {})):
        await worker.create(
            WORKLOADS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": workload_name, "namespace": mk.ns, "labels": labels},
                "spec": {
                    "queueName": "lq",
                    "podSets": [{"name": "main", "count": 1, "template": POD_TEMPLATE}],
                },
            },
        )
    for job_name, labels in (
        ("orphan-job", {**orphan_labels, PREBUILT_LABEL: "orphan"}),
        ("user-job", {PREBUILT_LABEL: "orphan"}),
    ):
        await worker.create(
            JOBS,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": job_name, "namespace": mk.ns, "labels": labels},
                "spec": {"suspend": True, "template": POD_TEMPLATE},
            },
        )
    await mk.wait_gone(0, "orphan")
    await mk.wait_gone(0, "orphan-job", JOBS)
    assert await mk.remote(0, "not-ours") is not None
    assert await mk.remote(0, "user-job", JOBS) is not None


async def test_a_same_named_job_on_a_worker_that_is_not_ours_is_never_touched(
    mk: Fleet,
) -> None:
    user_job = await mk.workers[0].create(
        JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "shared", "namespace": mk.ns, "labels": {"team": "worker"}},
            "spec": {"suspend": True, "template": POD_TEMPLATE},
        },
    )
    await mk.start(ALL_AT_ONCE, gc_interval=1.0)
    name = await mk.submit("shared")
    await mk.wait_remote(0, name)
    await admitted_on_one(mk, name, 1)
    await mk.wait_gone(0, name)
    await mk.wait_remote(1, "shared", JOBS)

    # It finishes on worker 2 and everything of ours goes; the worker's own job stays.
    await mk.workers[1].patch(
        WORKLOADS,
        name,
        {"status": {"conditions": [condition("Finished", reason="Succeeded", message="done")]}},
        namespace=mk.ns,
        subresource="status",
    )
    await mk.wait_gone(1, name)
    await mk.wait_gone(1, "shared", JOBS)
    await asyncio.sleep(1.5)  # a garbage collection pass too
    still = await mk.remote(0, "shared", JOBS)
    assert still is not None
    assert still["metadata"]["uid"] == user_job["metadata"]["uid"]
    # Unchanged by us. On a full fleet the worker's own job controller may write the
    # Job's status, so compare what we could touch and who wrote it, not resourceVersion.
    assert still["spec"] == user_job["spec"]
    assert still["metadata"].get("labels") == user_job["metadata"].get("labels")
    assert still["metadata"].get("annotations") == user_job["metadata"].get("annotations")
    writers = {entry["manager"] for entry in still["metadata"].get("managedFields", [])}
    original = {entry["manager"] for entry in user_job["metadata"].get("managedFields", [])}
    assert writers <= original | {"kube-controller-manager"}


async def test_deleting_the_manager_workload_removes_its_copies(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, gc_interval=0)
    name = await mk.submit("deleted")
    await mk.wait_remote(0, name)
    await mk.wait_remote(1, name)
    await mk.manager.delete(WORKLOADS, name, namespace=mk.ns)
    await mk.wait_gone(0, name)
    await mk.wait_gone(1, name)


async def test_eviction_on_the_manager_deactivates_the_copy_then_removes_it(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("preempted")
    await mk.wait_remote(1, name)
    local = await admitted_on_one(mk, name, 0)

    # The manager's engine preempts the workload; it still holds quota while it stops.
    await mk.manager.patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    *local["status"]["conditions"],
                    condition("Evicted", reason="Preempted", message="Preempted on the manager"),
                ]
            }
        },
        namespace=mk.ns,
        subresource="status",
    )

    async def deactivation() -> dict[str, Any] | None:
        remote = await mk.remote(0, name)
        return None if remote is None else conditions_of(remote).get("DeactivationTarget")

    target = await eventually(deactivation, what="DeactivationTarget on the worker's copy")
    assert (target["status"], target["reason"]) == ("True", "EvictedOnManagerCluster")
    assert target["message"] == "Evicted on manager: Preempted on the manager"
    assert await mk.remote(0, "preempted", JOBS) is not None

    await mk.manager.patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved", status="False", reason="Pending"),
                    condition("Evicted", reason="Preempted", message="Preempted on the manager"),
                ],
                "admission": None,
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    await mk.wait_gone(0, name)
    await mk.wait_gone(0, "preempted", JOBS)


async def test_a_priority_change_reaches_the_copy_in_place(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE)
    name = await mk.submit("urgent")
    await mk.wait_remote(1, name)
    copy = await mk.wait_remote(0, name)
    await mk.manager.patch(WORKLOADS, name, {"spec": {"priority": 1000}}, namespace=mk.ns)

    async def patched() -> dict[str, Any] | None:
        remote = await mk.remote(0, name)
        return remote if remote and remote["spec"].get("priority") == 1000 else None

    updated = await eventually(patched, what="priority patched on the copy")
    assert updated["metadata"]["uid"] == copy["metadata"]["uid"]  # patched, not replaced


async def test_a_restarted_hub_resumes_the_nomination_without_a_second_copy(mk: Fleet) -> None:
    await mk.start(CAPACITY_AWARE, nomination_timeout=60.0)
    name = await mk.submit("resumed")
    first = await mk.wait_remote(0, name)
    await mk.restart_dispatch()
    await asyncio.sleep(1.5)  # the new dispatch has synced and reconciled the workload
    local = await mk.local(name)
    assert local["status"]["nominatedClusterNames"] == [mk.clusters[0]]
    assert await mk.remote(1, name) is None
    same = await mk.remote(0, name)
    assert same is not None and same["metadata"]["uid"] == first["metadata"]["uid"]

    await mk.admit_on(0, name)
    await mk.wait_check(name, "Ready")
    job = await mk.wait_remote(0, "resumed", JOBS)
    await mk.restart_dispatch()
    await asyncio.sleep(1.5)
    again = await mk.remote(0, "resumed", JOBS)
    assert again is not None and again["metadata"]["uid"] == job["metadata"]["uid"]
    assert await mk.remote(1, "resumed", JOBS) is None
    assert mk.check_state(await mk.local(name))["state"] == "Ready"


async def test_an_external_dispatcher_decides_and_the_copies_follow(mk: Fleet) -> None:
    await mk.start("example.com/my-dispatcher")
    name = await mk.submit("external")
    await asyncio.sleep(1.0)
    assert await mk.remote(0, name) is None and await mk.remote(1, name) is None
    await mk.manager.patch(
        WORKLOADS,
        name,
        {"status": {"nominatedClusterNames": [mk.clusters[1]]}},
        namespace=mk.ns,
        subresource="status",
    )
    await admitted_on_one(mk, name, 1)
    assert await mk.remote(0, name) is None
    assert (await mk.local(name))["status"]["clusterName"] == mk.clusters[1]


async def test_the_incremental_dispatcher_runs_a_job(mk: Fleet) -> None:
    await mk.start("kueue.x-k8s.io/multikueue-dispatcher-incremental")
    name = await mk.submit("incremental")
    await mk.wait_remote(0, name)
    await mk.wait_remote(1, name)  # step size 3 covers both workers in the first round
    local = await admitted_on_one(mk, name, 1)
    assert local["status"]["clusterName"] == mk.clusters[1]
    await mk.wait_gone(0, name)


async def test_a_copy_gone_from_a_reachable_worker_is_retried_at_once(mk: Fleet) -> None:
    await mk.start(ALL_AT_ONCE, worker_lost_timeout=600.0)
    name = await mk.submit("vanished")
    await mk.wait_remote(1, name)
    await admitted_on_one(mk, name, 0)
    await mk.workers[0].delete(WORKLOADS, name, namespace=mk.ns)
    local = await mk.wait_check(name, "Retry", timeout=15.0)
    assert mk.check_state(local)["message"] == "Admitting remote lost"
