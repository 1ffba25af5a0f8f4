"""Topology-aware scheduling on a real apiserver: the hub reads Topologies, Nodes and pods,
and a Workload asking for one rack is admitted with a topologyAssignment inside one rack,
or stays pending with upstream's message when no rack is big enough."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from core.kube.client import PatchType
from core.kube.errors import AlreadyExists
from core.kube.resources import NODES, PODS
from core.manager import watched_kinds as kinds
from tests.builders import Workload
from tests.integration.rbac_resources import SERVICE_ACCOUNTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

RACK = "tas.fleetq.dev/rack"
POOL = "tas.fleetq.dev/pool"
HOST = "kubernetes.io/hostname"


async def _node(cluster: Any, name: str, rack: str, pool: str) -> None:
    await cluster.create(
        NODES,
        {"metadata": {"name": name, "labels": {POOL: pool, RACK: rack, HOST: name}}, "spec": {}},
    )
    allocatable = {"cpu": "1", "memory": "4Gi", "pods": "10"}
    # Status through its subresource, as a kubelet reports it; then lift the not-ready
    # taint the node controller (absent here) would lift.
    await cluster.client.patch(
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
    await cluster.client.patch(NODES, name, {"spec": {"taints": None}}, patch_type=PatchType.MERGE)


async def _tas_queue(cluster: Any) -> tuple[str, str, list[str]]:
    """Two racks of two 1-cpu nodes, a Topology, a TAS flavor on them and a queue."""
    pool = cluster.suffix
    topology = cluster.name("racks")
    await cluster.create(
        kinds.TOPOLOGIES,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": topology},
            "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
    )
    nodes = []
    for rack in ("r1", "r2"):
        for host in ("a", "b"):
            name = f"tas-{pool}-{rack}-{host}"
            await _node(cluster, name, rack, pool)
            nodes.append(name)
    flavor = cluster.name("tas")
    await cluster.create(
        kinds.RESOURCE_FLAVORS,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
            "spec": {"nodeLabels": {POOL: pool}, "topologyName": topology},
        },
    )
    cq = await cluster.cluster_queue("tas", flavor, "10")
    lq = await cluster.local_queue("main", cq)
    return topology, lq, nodes


async def _tas_workload(cluster: Any, name: str, queue: str, pods: int) -> None:
    body = Workload(name).queue(queue).pod_set("main", pods, requests={"cpu": "1"}).obj()
    body["spec"]["podSets"][0]["topologyRequest"] = {"required": RACK}
    await cluster.create(kinds.WORKLOADS, body)


async def _admitted(cluster: Any, name: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload and cluster.is_true(workload, "QuotaReserved") else None


async def _pending_message(cluster: Any, name: str, part: str) -> str | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    reserved = cluster.condition(workload or {}, "QuotaReserved")
    if reserved and reserved["status"] == "False" and part in reserved["message"]:
        return str(reserved["message"])
    return None


async def test_a_rack_request_is_placed_in_one_rack_or_waits_with_a_reason(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    topology, lq, nodes = await _tas_queue(cluster)
    await _tas_workload(cluster, "pair", lq, 2)
    pair = await cluster.eventually(lambda: _admitted(cluster, "pair"), what="pair admitted")
    assignment = pair["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert assignment["levels"] == [HOST]
    (slice_,) = assignment["slices"]
    assert slice_["domainCount"] == 2
    assert slice_["podCounts"] == {"universal": 1}
    values = slice_["valuesPerLevel"][0]["individual"]
    hosts = [values.get("prefix", "") + root + values.get("suffix", "") for root in values["roots"]]
    assert hosts in (nodes[:2], nodes[2:])

    # Three pods fit the quota and the cluster, but no single rack.
    await _tas_workload(cluster, "trio", lq, 3)
    message = await cluster.eventually(
        lambda: _pending_message(cluster, "trio", "allows to fit only"), what="trio pending"
    )
    # The pair holds two nodes, so those count as excluded for want of cpu.
    assert message == (
        f'couldn\'t assign flavors to pod set main: topology "{topology}" allows to fit only '
        '2 out of 3 pod(s). Total nodes: 4; excluded: resource "cpu": 2'
    )


async def test_pods_outside_tas_take_node_capacity(hubs: Any, cluster: Any) -> None:
    await hubs.start()
    _, lq, nodes = await _tas_queue(cluster)
    with contextlib.suppress(AlreadyExists):  # no controller-manager on a lite fleet
        await cluster.create(SERVICE_ACCOUNTS, {"metadata": {"name": "default"}})
    # A running pod (not placed by TAS) on one node of each rack.
    for node in (nodes[0], nodes[2]):
        await cluster.create(
            PODS,
            {
                "metadata": {"name": f"daemon-{node}"},
                "spec": {
                    "nodeName": node,
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/daemon:latest",
                            "resources": {"requests": {"cpu": "500m"}},
                        }
                    ],
                },
            },
        )
    await _tas_workload(cluster, "pair", lq, 2)
    await cluster.eventually(
        lambda: _pending_message(cluster, "pair", "allows to fit only 1 out of 2"),
        what="pair waits for a rack with two free nodes",
    )
    # The pods go away: the rack is whole again and the workload is admitted.
    for node in (nodes[0], nodes[2]):
        await cluster.client.delete(
            PODS, f"daemon-{node}", namespace=cluster.namespace, grace_period_seconds=0
        )
    await cluster.eventually(lambda: _admitted(cluster, "pair"), what="pair admitted")


def _gated_pod(name: str, workload: str) -> dict[str, Any]:
    """A pod as a job controller makes it from an admitted TAS pod template."""
    return {
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/podset": "main"},
            "annotations": {
                "kueue.x-k8s.io/workload": workload,
                "kueue.x-k8s.io/podset-required-topology": RACK,
            },
        },
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/train:latest",
                    "resources": {"requests": {"cpu": "500m"}},
                }
            ],
        },
    }


async def _pinned(cluster: Any, names: list[str]) -> dict[str, str] | None:
    """Pod name -> the host its node selector names, once every pod is ungated."""
    out = {}
    for name in names:
        pod = await cluster.get(PODS, name)
        spec = (pod or {}).get("spec") or {}
        if not pod or spec.get("schedulingGates"):
            return None
        out[name] = spec.get("nodeSelector", {}).get(HOST)
    return out


def _hosts(workload: dict[str, Any]) -> list[tuple[str, int]]:
    from core.adapters.topology_encoding import decode

    psa = workload["status"]["admission"]["podSetAssignments"][0]
    return [(d.values[-1], d.count) for d in decode(psa["topologyAssignment"]).domains]


async def test_gated_pods_are_pinned_to_their_domain_and_a_failed_node_moves_them(
    hubs: Any, cluster: Any
) -> None:
    await hubs.start()
    _, lq, nodes = await _tas_queue(cluster)
    with contextlib.suppress(AlreadyExists):  # no controller-manager on a lite fleet
        await cluster.create(SERVICE_ACCOUNTS, {"metadata": {"name": "default"}})
    body = Workload("pair").queue(lq).pod_set("main", 2, requests={"cpu": "500m"}).obj()
    body["spec"]["podSets"][0]["topologyRequest"] = {"required": RACK}
    await cluster.create(kinds.WORKLOADS, body)
    admitted = await cluster.eventually(lambda: _admitted(cluster, "pair"), what="pair admitted")
    # Two half-cpu pods, one rack: best fit puts both on one node.
    ((host, count),) = _hosts(admitted)
    assert count == 2
    for name in ("p0", "p1"):
        await cluster.create(PODS, _gated_pod(name, "pair"))
    pinned = await cluster.eventually(
        lambda: _pinned(cluster, ["p0", "p1"]), what="pods ungated onto their domain"
    )
    assert pinned == {"p0": host, "p1": host}

    # The node is tainted NoExecute: nothing of the pair runs there, so it has failed.
    rack_mate = next(
        n for n in nodes if n != host and n.rsplit("-", 1)[0] == host.rsplit("-", 1)[0]
    )
    await cluster.client.patch(
        NODES,
        host,
        {"spec": {"taints": [{"key": "example.com/broken", "effect": "NoExecute"}]}},
        patch_type=PatchType.MERGE,
    )

    async def moved() -> dict[str, Any] | None:
        workload = await cluster.get(kinds.WORKLOADS, "pair")
        if not workload or _hosts(workload) != [(rack_mate, 2)]:
            return None
        return workload if not workload["status"].get("unhealthyNodes") else None

    moved_workload = await cluster.eventually(
        moved, what="the failed node's pods moved in the rack"
    )
    assert cluster.is_true(moved_workload, "Admitted")
    assert not cluster.is_true(moved_workload, "Evicted")
    for name in ("p0", "p1"):  # pinned to the failed node and never bound: marked Failed
        pod = await cluster.get(PODS, name)
        assert pod is not None and pod["status"]["phase"] == "Failed"
        assert any(
            c["type"] == "TerminatedByKueue" and c["reason"] == "UnschedulableOnAssignedNode"
            for c in pod["status"]["conditions"]
        )
    # Their replacements (the job controller's, played here) go to the new domain.
    for name in ("p2", "p3"):
        await cluster.create(PODS, _gated_pod(name, "pair"))
    repinned = await cluster.eventually(
        lambda: _pinned(cluster, ["p2", "p3"]), what="replacement pods ungated"
    )
    assert repinned == {"p2": rack_mate, "p3": rack_mate}
