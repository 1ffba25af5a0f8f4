"""The worker agent against a real apiserver (worker-1 of the session fleet).

Each test runs an `Agent` in-process (the object `fleetq agent` runs) and gives it nodes
of its own: Node objects created through the API with GPUs in `status.allocatable`, the
way kwok registers fake nodes, labelled with the test's unique pool, and a ResourceFlavor
selecting that pool, so nodes and flavors other tests leave on the cluster never count.
Pods are created already bound (`spec.nodeName`), which is all the report looks at.
Everything is deleted afterwards (pods and nodes with no grace, since no kubelet would
confirm their end).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from core.api.registry import kind_info
from core.kube.client import KubeClient, PatchType
from core.kube.errors import AlreadyExists, NotFound
from core.kube.resources import NAMESPACES, NODES, PODS
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from devfleet.cluster_access import RunningFleet
from tests.builders import GPU, ClusterQueue, FlavorQuotas, LocalQueue, ResourceFlavor, Workload
from tests.integration.polling import eventually
from tests.integration.rbac_resources import SERVICE_ACCOUNTS
from worker_agent.agent import Agent, AgentOptions
from worker_agent.capacity_publisher import PublisherSettings

pytestmark = pytest.mark.asyncio(loop_scope="session")

POOL_LABEL = "fleetq.test/agent-pool"
WORKER_CAPACITIES = kind_info("WorkerCapacity")
FINALIZER = "kueue.x-k8s.io/resource-in-use"


def flavor_entry(report: dict[str, Any] | None, flavor: str) -> dict[str, Any] | None:
    for entry in ((report or {}).get("status") or {}).get("flavors") or ():
        if entry["name"] == flavor:
            return dict(entry)
    return None


def queue_entry(report: dict[str, Any] | None, cluster_queue: str) -> dict[str, Any] | None:
    for entry in ((report or {}).get("status") or {}).get("clusterQueues") or ():
        if entry["name"] == cluster_queue:
            return dict(entry)
    return None


def reporting(report: dict[str, Any] | None) -> dict[str, Any] | None:
    for condition in ((report or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == "Reporting":
            return dict(condition)
    return None


class AgentWorld:
    """The test's pool on worker-1: nodes, flavor, queues, pods, and the agents it runs."""

    def __init__(self, client: KubeClient, suffix: str) -> None:
        self.client = client
        self.suffix = suffix
        self.namespace = f"agent-{suffix}"
        self.flavor = f"pool-{suffix}"
        self.cluster_queue = f"cq-{suffix}"
        self.local_queue = "team"
        self.report_name = f"worker-{suffix}"
        self.nodes: list[str] = []
        self.pods: list[str] = []
        self.agents: list[tuple[Agent, asyncio.Task[None]]] = []

    # -- objects ---------------------------------------------------------------------
    async def setup(self, gpu_quota: int = 16) -> None:
        await self.client.create(NAMESPACES, {"metadata": {"name": self.namespace}})
        with contextlib.suppress(AlreadyExists):  # no controller-manager on a lite fleet
            await self.client.create(
                SERVICE_ACCOUNTS, {"metadata": {"name": "default"}}, namespace=self.namespace
            )
        flavor = ResourceFlavor(self.flavor).node_labels({POOL_LABEL: self.suffix})
        await self.client.create(kinds.RESOURCE_FLAVORS, flavor.obj())
        quotas = FlavorQuotas(self.flavor, {"cpu": "64", GPU: str(gpu_quota)})
        queue = ClusterQueue(self.cluster_queue).only_namespace(self.namespace)
        await self.client.create(kinds.CLUSTER_QUEUES, queue.resource_group(quotas).obj())
        local_queue = LocalQueue(self.local_queue, self.namespace)
        await self.client.create(
            kinds.LOCAL_QUEUES, local_queue.cluster_queue(self.cluster_queue).obj()
        )

    async def node(self, short: str, gpus: int = 8) -> str:
        name = f"agent-{self.suffix}-{short}"
        allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: str(gpus)}
        await self.client.create(
            NODES,
            {
                "metadata": {
                    "name": name,
                    "labels": {POOL_LABEL: self.suffix, "kubernetes.io/hostname": name},
                    # kwok (on a full fleet) keeps nodes it manages Ready.
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                },
                "spec": {},
            },
        )
        self.nodes.append(name)
        # Status goes through its subresource, as a kubelet (or kwok) reports it.
        await self.client.patch(
            NODES,
            name,
            {
                "status": {
                    "capacity": allocatable,
                    "allocatable": allocatable,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "Test"}],
                }
            },
            patch_type=PatchType.MERGE,
            subresource="status",
        )
        # The apiserver taints a new node not-ready; the node controller (absent on a lite
        # fleet) lifts the taint once the node reports Ready. Do its part.
        await self.client.patch(NODES, name, {"spec": {"taints": None}}, patch_type=PatchType.MERGE)
        return name

    async def pod(self, short: str, node: str, gpus: int) -> str:
        name = f"p-{short}"
        await self.client.create(
            PODS,
            {
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {
                    "nodeName": node,
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/train:latest",
                            "resources": {
                                "requests": {"cpu": "1"},
                                "limits": {GPU: str(gpus)},
                            },
                        }
                    ],
                },
            },
        )
        self.pods.append(name)
        return name

    async def workload(self, name: str, gpus: int) -> None:
        workload = Workload(name, self.namespace).queue(self.local_queue)
        await self.client.create(
            kinds.WORKLOADS, workload.pod_set("main", 1, requests={GPU: str(gpus)}).obj()
        )

    async def pod_versions(self) -> dict[str, str]:
        """resourceVersion of every pod this world made (kwok moves them on a full fleet)."""
        listed = await self.client.list(PODS, namespace=self.namespace)
        return {
            p["metadata"]["name"]: str(p["metadata"].get("resourceVersion"))
            for p in listed.items
            if p["metadata"]["name"] in self.pods
        }

    async def report(self) -> dict[str, Any] | None:
        try:
            return await self.client.get(WORKER_CAPACITIES, self.report_name)
        except NotFound:
            return None

    async def flavor_report(self, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Wait until this test's flavor entry satisfies `check`; return it."""

        seen: list[dict[str, Any] | None] = [None]

        async def probe() -> dict[str, Any] | None:
            seen[0] = await self.report()
            entry = flavor_entry(seen[0], self.flavor)
            return entry if entry is not None and check(entry) else None

        try:
            return await eventually(probe, what=f"flavor {self.flavor} in the report")
        except AssertionError as error:
            raise AssertionError(f"{error}; report: {seen[0]!r}") from None

    # -- agents ----------------------------------------------------------------------
    async def start_agent(self, **publisher: Any) -> Agent:
        configuration = dataclasses.replace(
            Configuration(), leader_election=LeaderElection(leader_elect=False)
        )
        agent = Agent(
            configuration,
            self.client,
            AgentOptions(
                cluster_name=f"cluster-{self.suffix}",
                health_port=-1,
                metrics_port=-1,
                queue_status_interval_seconds=0.2,
                publisher=PublisherSettings(
                    cluster_name=f"cluster-{self.suffix}",
                    report_name=self.report_name,
                    **publisher,
                ),
            ),
        )
        task = asyncio.create_task(agent.run(), name=f"agent-{self.suffix}")
        self.agents.append((agent, task))

        async def ready() -> bool:
            if task.done():
                task.result()
            return agent.ready

        await eventually(ready, timeout=30, what="agent caches synced")
        return agent

    async def stop_agent(self, agent: Agent) -> None:
        for entry in list(self.agents):
            if entry[0] is agent:
                self.agents.remove(entry)
                entry[1].cancel()
                await asyncio.gather(entry[1], return_exceptions=True)

    async def teardown(self) -> None:
        for agent, _ in list(self.agents):
            await self.stop_agent(agent)
        client = self.client
        for name in self.pods:
            with contextlib.suppress(NotFound):
                await client.request(
                    "DELETE",
                    f"/api/v1/namespaces/{self.namespace}/pods/{name}",
                    query={"gracePeriodSeconds": "0"},
                )
        for name in self.nodes:
            with contextlib.suppress(NotFound):
                await client.delete(NODES, name)
        with contextlib.suppress(NotFound):
            await client.delete(WORKER_CAPACITIES, self.report_name)
        for resource, name in (
            (kinds.CLUSTER_QUEUES, self.cluster_queue),
            (kinds.RESOURCE_FLAVORS, self.flavor),
        ):
            with contextlib.suppress(NotFound):
                await client.patch(
                    resource, name, {"metadata": {"finalizers": None}}, patch_type=PatchType.MERGE
                )
                await client.delete(resource, name)
        with contextlib.suppress(NotFound):
            await client.delete(NAMESPACES, self.namespace)

    def writes(self, agent: Agent) -> float:
        registry = agent.manager.metrics.registry
        value = registry.get_sample_value(
            "fleetq_agent_capacity_report_writes_total", {"result": "written"}
        )
        return value or 0.0


@pytest.fixture
async def world(kueue_crds: RunningFleet) -> AsyncIterator[AgentWorld]:
    worker = kueue_crds.cluster("worker-1")
    client = await KubeClient.from_kubeconfig(worker.kubeconfig, name=worker.name, qps=200)
    world = AgentWorld(client, uuid.uuid4().hex[:8])
    try:
        await world.setup()
        yield world
    finally:
        await world.teardown()
        await client.close()


async def test_the_report_counts_the_flavors_nodes_and_what_running_pods_hold(
    world: AgentWorld,
) -> None:
    node_a = await world.node("a")
    await world.node("b")
    await world.start_agent()

    entry = await world.flavor_report(lambda e: e.get("nodeCount") == 2)
    assert entry["allocatable"][GPU] == "16"
    assert entry["free"][GPU] == "16"
    assert [block[GPU] for block in entry["largestFreeBlocks"]] == ["8", "8"]
    report = await world.report()
    assert report is not None
    assert report["spec"]["clusterName"] == f"cluster-{world.suffix}"
    condition = reporting(report)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "AgentRunning")
    queue = queue_entry(report, world.cluster_queue)
    assert queue is not None
    assert queue["quota"] == [{"name": world.flavor, "resources": {"cpu": "64", GPU: "16"}}]

    # A pod bound to node a takes 3 GPUs there: free drops, and the biggest block is b's.
    pod = await world.pod("three", node_a, gpus=3)
    entry = await world.flavor_report(lambda e: e["free"][GPU] == "13")
    assert entry["requested"][GPU] == "3"
    assert [block[GPU] for block in entry["largestFreeBlocks"]] == ["8", "5"]

    # A finished pod holds nothing (it leaves the agent's field-selected pod cache).
    await world.client.patch(
        PODS,
        pod,
        {"status": {"phase": "Succeeded"}},
        patch_type=PatchType.MERGE,
        namespace=world.namespace,
        subresource="status",
    )
    await world.flavor_report(lambda e: e["free"][GPU] == "16")

    # A cordoned node no longer counts.
    await world.client.patch(
        NODES, node_a, {"spec": {"unschedulable": True}}, patch_type=PatchType.MERGE
    )
    entry = await world.flavor_report(lambda e: e.get("nodeCount") == 1)
    assert entry["allocatable"][GPU] == "8"


async def test_queue_usage_and_backlog_come_from_the_local_engine(world: AgentWorld) -> None:
    await world.node("a")
    await world.start_agent()
    await world.workload("first", gpus=12)
    await world.workload("second", gpus=8)  # 12 + 8 > 16: waits

    async def figures() -> dict[str, Any] | None:
        queue = queue_entry(await world.report(), world.cluster_queue)
        if queue and queue.get("admittedWorkloads") == 1 and queue.get("pendingWorkloads") == 1:
            return queue
        return None

    queue = await eventually(figures, what="one admitted and one pending workload")
    assert queue["usage"] == [{"name": world.flavor, "resources": {"cpu": "0", GPU: "12"}}]

    # Finishing the first frees its quota; the engine admits the second.
    await world.client.delete(kinds.WORKLOADS, "first", namespace=world.namespace)

    async def second_admitted() -> dict[str, Any] | None:
        queue = queue_entry(await world.report(), world.cluster_queue)
        usage = (queue or {}).get("usage") or []
        if (
            usage
            and usage[0]["resources"][GPU] == "8"
            and queue
            and queue.get("pendingWorkloads", 0) == 0
        ):
            return queue
        return None

    await eventually(second_admitted, what="the second workload's usage reported")


async def test_bursts_of_changes_are_coalesced_to_one_write_a_second(world: AgentWorld) -> None:
    node = await world.node("a", gpus=8)
    agent = await world.start_agent(heartbeat_seconds=3600.0)
    await world.flavor_report(lambda e: e["free"][GPU] == "8")

    # Wait for four seconds in which neither a pod nor the write count moved: on a loaded
    # machine start-up changes (the node turning Ready) may still be on their way, and a
    # write of theirs must not be counted as the burst's.
    async def quiet() -> float | None:
        count, pods = world.writes(agent), await world.pod_versions()
        await asyncio.sleep(4.0)
        unchanged = world.writes(agent) == count and await world.pod_versions() == pods
        return count if unchanged else None

    before = await eventually(quiet, timeout=60, what="four seconds without a change")

    started = time.monotonic()
    for index in range(8):
        await world.pod(f"burst-{index}", node, gpus=1)
    await world.flavor_report(lambda e: e["free"][GPU] == "0")
    elapsed = time.monotonic() - started
    written = world.writes(agent) - before
    # One write may go out at once; after it, at most one per second.
    assert 1 <= written <= 1 + math.ceil(elapsed), (written, elapsed)

    # Nothing changes: nothing is written (the heartbeat is an hour away). Writes the burst
    # already scheduled may still go out, and on a full fleet kwok moves the pods on
    # (Running, Ready) for a while, each a change, slowly on a loaded machine: wait for four
    # seconds in which neither a pod nor the write count moved before taking the report.
    # Then 2.5 s more: if no pod moved meanwhile, nothing may have been written (a pod kwok
    # moved on late, slower than four seconds on a loaded machine, starts the wait again).
    async def settled_without_writes() -> bool | None:
        quiet_writes = await quiet()
        if quiet_writes is None:
            return None
        pods, settled = await world.pod_versions(), await world.report()
        assert settled is not None
        await asyncio.sleep(2.5)
        if await world.pod_versions() != pods:
            return None
        assert world.writes(agent) == quiet_writes
        after = await world.report()
        assert after is not None
        assert after["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]
        return True

    await eventually(settled_without_writes, timeout=90, what="a quiet agent writing nothing")


async def test_heartbeat_recreation_and_a_clean_stop(world: AgentWorld) -> None:
    await world.node("a")
    agent = await world.start_agent(heartbeat_seconds=1.5)
    await world.flavor_report(lambda e: e.get("nodeCount") == 1)
    first = await world.report()
    assert first is not None

    # Nothing changes, yet the report is rewritten with a newer observedTime.
    async def rewritten() -> dict[str, Any] | None:
        report = await world.report()
        if report and report["status"]["observedTime"] != first["status"]["observedTime"]:
            return report
        return None

    beat = await eventually(rewritten, timeout=10, what="a heartbeat write")
    assert flavor_entry(beat, world.flavor) == flavor_entry(first, world.flavor)
    condition, first_condition = reporting(beat), reporting(first)
    assert condition is not None and first_condition is not None
    assert condition["lastTransitionTime"] == first_condition["lastTransitionTime"]

    # Someone deletes the report: the agent writes it again.
    await world.client.delete(WORKER_CAPACITIES, world.report_name)
    await world.flavor_report(lambda e: e.get("nodeCount") == 1)

    # A clean stop leaves the last report marked as no longer current.
    await world.stop_agent(agent)
    stopped = await world.report()
    condition = reporting(stopped)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "AgentStopped")
    assert flavor_entry(stopped, world.flavor) is not None
