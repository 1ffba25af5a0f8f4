"""A real hub, in-process, against the lite fleet's manager cluster.

Each test runs one or more `Hub`s as asyncio tasks of the session's event loop (exactly
the object `fleetq hub` runs), creates its objects through a client of its own (uniquely
named cluster-scoped objects, a namespace of its own) and waits for what the hub writes.
Other tests share the cluster, so assertions only look at the test's own objects, and
cluster-scoped objects are removed afterwards (finalizers dropped first, since the hub
that would drop them may already be gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from core.kube.client import KubeClient, PatchType
from core.kube.errors import Conflict, KubeError, NotFound
from core.kube.informer import EventHandlers, Informer
from core.kube.resources import JOBS, ResourceRef
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from devfleet.cluster_access import RunningFleet
from hub.app import Hub, HubOptions
from tests.builders import (
    ClusterQueue,
    FlavorQuotas,
    Job,
    LocalQueue,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
)
from tests.integration.polling import eventually

REPO = Path(__file__).resolve().parents[3]
FINALIZER = "kueue.x-k8s.io/resource-in-use"


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def is_true(obj: dict[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


class HubRunner:
    """Starts hubs as tasks; stops whatever is left when the test ends."""

    def __init__(self, fleet: RunningFleet) -> None:
        self.fleet = fleet
        self.running: list[tuple[Hub, asyncio.Task[None], KubeClient]] = []

    async def start(
        self,
        configuration: Configuration | None = None,
        options: HubOptions | None = None,
        *,
        wait_ready: bool = True,
    ) -> Hub:
        client = await KubeClient.from_kubeconfig(
            self.fleet.manager.kubeconfig, name=self.fleet.manager.name, qps=200, burst=400
        )
        configuration = configuration or dataclasses.replace(
            Configuration(), leader_election=LeaderElection(leader_elect=False)
        )
        hub = Hub(
            configuration,
            client,
            options
            or HubOptions(
                health_port=-1,
                metrics_port=-1,
                queue_status_interval_seconds=0.2,
                webhooks=False,
            ),
        )
        task = asyncio.create_task(hub.run(), name=f"hub-{hub.identity}")
        self.running.append((hub, task, client))
        if wait_ready:
            await eventually(lambda: _ready(hub, task), timeout=30, what="hub caches synced")
        return hub

    async def stop(self, hub: Hub) -> None:
        for entry in list(self.running):
            if entry[0] is hub:
                self.running.remove(entry)
                _, task, client = entry
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await client.close()

    async def stop_all(self) -> None:
        for hub, _, _ in list(self.running):
            await self.stop(hub)


async def _ready(hub: Hub, task: asyncio.Task[None]) -> bool:
    if task.done():
        task.result()  # surface the failure
    return hub.ready


class HubProcess:
    """`fleetq hub` as a real process (what an operator runs), killable with SIGKILL.

    Metrics and webhooks are off (a killed hub must not leave fail-closed webhooks behind
    on the shared cluster); /readyz is served on a port of its own.
    """

    def __init__(self, kubeconfig: Path, workdir: Path, identity: str, config: dict[str, Any]):
        self.kubeconfig = kubeconfig
        self.identity = identity
        self.config_path = workdir / f"{identity}-config.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = workdir / f"{identity}.log"
        self.health_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.health_port = _free_port()
        self.starts += 1
        with self.log_path.open("a") as log:
            log.write(f"--- start {self.starts} ---\n")
            log.flush()
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cli.main",
                    "hub",
                    "--config",
                    str(self.config_path),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--health-port",
                    str(self.health_port),
                    "--metrics-port=-1",
                    "--no-webhooks",
                    "--identity",
                    self.identity,
                ],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    async def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.health_port}/readyz"
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if not self.running:
                    raise AssertionError(f"{self.identity} exited:\n{self.log_tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as reply:
                        if reply.status == 200:
                            return
                await asyncio.sleep(0.2)
        raise AssertionError(f"{self.identity} never became ready:\n{self.log_tail()}")

    def kill(self) -> None:
        """kill -9: no cleanup, no Lease release, writes in flight are cut off."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_events(self, event: str) -> list[dict[str, Any]]:
        """The JSON log lines of `event` this process wrote (every start)."""
        found = []
        for line in self.log_path.read_text().splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if entry.get("event") == event:
                        found.append(entry)
        return found

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HubProcesses:
    """Starts `fleetq hub` processes for one test; stops whatever is left afterwards."""

    def __init__(self, fleet: RunningFleet, workdir: Path) -> None:
        self.fleet = fleet
        self.workdir = workdir
        self.processes: list[HubProcess] = []

    async def start(self, identity: str, config: dict[str, Any]) -> HubProcess:
        hub = HubProcess(self.fleet.manager.kubeconfig, self.workdir, identity, config)
        self.processes.append(hub)
        hub.start()
        await hub.wait_ready()
        return hub

    def stop_all(self) -> None:
        for hub in self.processes:
            hub.stop()


@pytest.fixture
def hub_processes(kueue_crds: RunningFleet, tmp_path: Path) -> Iterator[HubProcesses]:
    processes = HubProcesses(kueue_crds, tmp_path)
    try:
        yield processes
    finally:
        processes.stop_all()


@pytest.fixture
async def hubs(kueue_crds: RunningFleet) -> AsyncIterator[HubRunner]:
    runner = HubRunner(kueue_crds)
    try:
        yield runner
    finally:
        await runner.stop_all()


class Cluster:
    """The test's view of the manager: create objects, read them, clean up.

    Test modules cannot import this conftest, so the polling and condition helpers are
    reachable from the fixture too (`cluster.eventually`, `cluster.condition`, ...).
    """

    eventually = staticmethod(eventually)
    condition = staticmethod(condition)
    is_true = staticmethod(is_true)

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.suffix = uuid.uuid4().hex[:6]
        self._cluster_scoped: list[tuple[ResourceRef, str]] = []

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    async def create(self, resource: ResourceRef, body: dict[str, Any]) -> dict[str, Any]:
        if not resource.namespaced:
            self._cluster_scoped.append((resource, body["metadata"]["name"]))
        else:
            body["metadata"].setdefault("namespace", self.namespace)
        created: dict[str, Any] = await self.client.create(resource, body)
        return created

    async def get(self, resource: ResourceRef, name: str) -> dict[str, Any] | None:
        namespace = self.namespace if resource.namespaced else None
        try:
            found: dict[str, Any] = await self.client.get(resource, name, namespace=namespace)
        except NotFound:
            return None
        return found

    async def list(self, resource: ResourceRef) -> list[dict[str, Any]]:
        page = await self.client.list(resource, namespace=self.namespace)
        return list(page.items)

    async def patch(self, resource: ResourceRef, name: str, body: dict[str, Any]) -> None:
        """A merge patch of the object itself (spec, metadata)."""
        await self.client.patch(
            resource,
            name,
            body,
            patch_type=PatchType.MERGE,
            namespace=self.namespace if resource.namespaced else None,
        )

    async def finish_workload(self, name: str, *, seen: dict[str, Any] | None = None) -> None:
        """Mark a Workload Finished as upstream's perf runner does: conditions appended,
        guarded by the version read (`seen`, if given, saves the read); a lost race is
        retried on a fresh read."""
        workload = seen
        while True:
            if workload is None:
                workload = await self.get(kinds.WORKLOADS, name)
            assert workload is not None, f"workload {name} is gone"
            if is_true(workload, "Finished"):
                return
            status = workload.get("status") or {}
            conditions = [c for c in status.get("conditions") or () if c["type"] != "Finished"]
            conditions.append(
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "ByTest",
                    "message": "finished by the test",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            )
            try:
                await self.client.patch(
                    kinds.WORKLOADS,
                    name,
                    {
                        "metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]},
                        "status": {"conditions": conditions},
                    },
                    patch_type=PatchType.MERGE,
                    namespace=self.namespace,
                    subresource="status",
                )
                return
            except Conflict:
                workload = None

    async def patch_status(self, resource: ResourceRef, name: str, status: dict[str, Any]) -> None:
        await self.client.patch(
            resource,
            name,
            {"status": status},
            patch_type=PatchType.MERGE,
            namespace=self.namespace if resource.namespaced else None,
            subresource="status",
        )

    # -- kueue objects -------------------------------------------------------------------
    async def flavor(self, base: str, node_labels: dict[str, str]) -> str:
        name = self.name(base)
        await self.create(
            kinds.RESOURCE_FLAVORS, ResourceFlavor(name).node_labels(node_labels).obj()
        )
        return name

    async def cluster_queue(
        self,
        base: str,
        flavor: str,
        cpu: str,
        *,
        preemption: dict[str, Any] | None = None,
        borrowing_limit: str | None = None,
        **spec_fields: Any,
    ) -> str:
        """A one-flavor CPU ClusterQueue; `spec_fields` go into its spec as given
        (cohortName, queueingStrategy, admissionChecksStrategy, stopPolicy, ...)."""
        name = self.name(base)
        queue = (
            ClusterQueue(name)
            # Only this test's namespace: other tests' workloads never land here.
            .only_namespace(self.namespace)
            .resource_group(
                FlavorQuotas(flavor).resource("cpu", cpu, borrowing_limit=borrowing_limit)
            )
            .spec(**spec_fields)
        )
        if preemption:
            queue.spec(preemption=preemption)
        await self.create(kinds.CLUSTER_QUEUES, queue.obj())
        return name

    async def local_queue(self, name: str, cluster_queue: str) -> str:
        await self.create(kinds.LOCAL_QUEUES, LocalQueue(name).cluster_queue(cluster_queue).obj())
        return name

    async def priority_class(self, base: str, value: int) -> str:
        name = self.name(base)
        await self.create(kinds.WORKLOAD_PRIORITY_CLASSES, WorkloadPriorityClass(name, value).obj())
        return name

    async def job(
        self,
        name: str,
        queue: str,
        *,
        cpu: str = "1",
        priority_class: str | None = None,
        node_selector: dict[str, str] | None = None,
        parallelism: int = 1,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        job = (
            Job(name)
            .queue(queue)
            .annotations(annotations or {})
            # No webhook runs here: the Job is created suspended, as it would make it.
            .suspend()
            .pods(parallelism)
            .node_selector(node_selector or {})
            .request("cpu", cpu)
        )
        if priority_class:
            job.priority_class(priority_class)
        return await self.create(JOBS, job.obj())

    async def workload(
        self,
        name: str,
        queue: str,
        *,
        cpu: str = "1",
        priority: int | None = None,
        finalizers: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """A Workload created directly, with no job (as upstream's perf runner does)."""
        workload = (
            Workload(name)
            .finalizers(*(finalizers or ()))
            .queue(queue)
            .pod_set("main", 1, requests={"cpu": cpu})
        )
        if priority is not None:
            workload.priority(priority)
        return await self.create(kinds.WORKLOADS, workload.obj())

    async def job_workload(self, job_name: str) -> dict[str, Any] | None:
        """The Workload controlled by the named Job (None until it exists)."""
        for workload in await self.list(kinds.WORKLOADS):
            for owner in workload["metadata"].get("ownerReferences") or ():
                if owner.get("kind") == "Job" and owner.get("name") == job_name:
                    return workload
        return None

    async def complete_job(self, name: str) -> None:
        """Write the status the Job controller would on success (no pods run here)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        await self.patch_status(
            JOBS,
            name,
            {
                "startTime": now,
                "completionTime": now,
                "succeeded": 1,
                "conditions": [
                    {
                        "type": "SuccessCriteriaMet",
                        "status": "True",
                        "lastProbeTime": now,
                        "lastTransitionTime": now,
                    },
                    {
                        "type": "Complete",
                        "status": "True",
                        "lastProbeTime": now,
                        "lastTransitionTime": now,
                    },
                ],
            },
        )

    async def cleanup(self) -> None:
        for resource, name in reversed(self._cluster_scoped):
            with contextlib.suppress(KubeError):
                await self.client.patch(
                    resource, name, {"metadata": {"finalizers": None}}, patch_type=PatchType.MERGE
                )
            with contextlib.suppress(KubeError):
                await self.client.delete(resource, name)


class WorkloadHistory:
    """Every version of the test namespace's Workloads, in the order a watch delivers them:
    for transitions too quick to catch by polling (an eviction completed and requeued
    within one write of each other)."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.versions: dict[str, list[dict[str, Any]]] = {}
        self.informer: Informer[dict[str, Any]] = Informer(
            client, kinds.WORKLOADS, into=dict, namespace=namespace
        )
        self.informer.add_handlers(
            EventHandlers(on_add=self._seen, on_update=lambda _, new: self._seen(new))
        )

    def _seen(self, obj: dict[str, Any]) -> None:
        self.versions.setdefault(obj["metadata"]["name"], []).append(obj)

    def conditions(self, name: str, type_: str) -> list[dict[str, Any]]:
        """Each distinct `type_` condition the Workload carried, oldest first."""
        seen: list[dict[str, Any]] = []
        for version in self.versions.get(name, ()):
            found = condition(version, type_)
            if found is not None and (not seen or seen[-1] != found):
                seen.append(found)
        return seen


@pytest.fixture
async def workload_history(cluster: Cluster) -> AsyncIterator[WorkloadHistory]:
    history = WorkloadHistory(cluster.client, cluster.namespace)
    task = asyncio.create_task(history.informer.run())
    try:
        await history.informer.wait_synced(30)
        yield history
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def cluster(kueue_crds: RunningFleet, namespace: str) -> AsyncIterator[Cluster]:
    client = await KubeClient.from_kubeconfig(
        kueue_crds.manager.kubeconfig, name=kueue_crds.manager.name, qps=200, burst=400
    )
    view = Cluster(client, namespace)
    try:
        yield view
    finally:
        await view.cleanup()
        await client.close()
