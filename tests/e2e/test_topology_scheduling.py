"""Topology-aware scheduling on the full fleet: real kube-scheduler, kwok GPU nodes in racks.

The dev fleet's `tas` pools (tainted `fleetq.dev/tas`, so no other test's pods land
there): worker-1 has one block of two racks of two 8-GPU nodes, worker-2 one rack of
three.
- single cluster (the hub manages worker-1): a 4-pod Job asking for one rack is created
  with its pods gated; the hub ungates each with its domain's node selector and
  kube-scheduler binds all four onto the two nodes of one rack, two per node;
- a node deleted under a running TAS Job: the Workload's assignment moves the node's pods
  to the other node of the same rack, and the Job's replacement pods run there;
- a Job preferring one rack lands in one rack when a rack has room, and only when no
  rack can hold it spreads over both racks, still admitted with every pod bound;
- MultiKueue: a 3-pod Job needing one rack of three free nodes is dispatched to worker-2,
  the only worker with such a rack (capacity-aware dispatch reads the agents' per-rack
  reports), and its pods run in that rack.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from core.adapters.topology_encoding import decode
from devfleet.cluster_access import ClusterAccess
from devfleet.fleet_spec import load_fleet_spec, node_manifests
from devfleet.multikueue_fleet import MultiKueueFleet
from devfleet.polling import until
from tests.builders import ClusterQueue, FlavorQuotas, LocalQueue, ResourceFlavor, kwok_job
from tests.e2e.multikueue_fixtures import ClusterView
from tests.e2e.single_cluster_hub import (
    GROUP,
    VERSION,
    create_kueue_object,
    delete_kueue_cluster_objects,
)

POOL = "fleetq.dev/node-pool"
BLOCK, RACK, HOST = "fleetq.dev/block", "fleetq.dev/rack", "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
TOLERATION = {"key": "fleetq.dev/tas", "operator": "Exists", "effect": "NoSchedule"}


def _topology(name: str) -> dict[str, Any]:
    return {
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
    }


def _tas_flavor(name: str, topology: str) -> dict[str, Any]:
    body = ResourceFlavor(name).node_labels({POOL: "tas"}).toleration(TOLERATION).obj()
    body["spec"]["topologyName"] = topology
    return body


@pytest.fixture
def tas_queue(hub_process: dict[str, Any], namespace_factory: Any) -> Iterator[tuple[str, str]]:
    """On worker-1 (the single-cluster hub's): a Topology over block, rack and hostname,
    a TAS flavor on the tas pool, a 32-GPU ClusterQueue and the LocalQueue `team`."""
    worker: ClusterAccess = hub_process["worker"]
    namespace = namespace_factory("tas", clusters=(worker,))
    suffix = namespace.rpartition("-")[2]
    topology, flavor, cq = f"racks-{suffix}", f"tas-{suffix}", f"tas-{suffix}"
    quotas = FlavorQuotas(flavor, {"cpu": "64", "memory": "256Gi", GPU: "32"})
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        create_kueue_object(custom, "topologies", _topology(topology))
        create_kueue_object(custom, "resourceflavors", _tas_flavor(flavor, topology))
        create_kueue_object(
            custom,
            "clusterqueues",
            ClusterQueue(cq).only_namespace(namespace).resource_group(quotas).obj(),
        )
        create_kueue_object(
            custom, "localqueues", LocalQueue("team").cluster_queue(cq).obj(), namespace
        )
    yield namespace, worker.name
    delete_kueue_cluster_objects(
        worker, [("clusterqueues", cq), ("resourceflavors", flavor), ("topologies", topology)]
    )


def _rack_job(
    name: str, *, pods: int, gpus: int, run_seconds: float, queue: str, ask: str = REQUIRED
) -> Any:
    """A kwok Job whose pods ask for one rack (`ask`: the required or preferred annotation)."""
    job = (
        kwok_job(name, gpus_per_pod=gpus, pods=pods, run_seconds=run_seconds)
        .queue(queue)
        .pod_annotation(ask, RACK)
    )
    return job


def _bound_pods(core: Any, namespace: str, count: int) -> list[Any] | None:
    """The namespace's live pods, once exactly `count` are bound to nodes."""
    pods = [
        p
        for p in core.list_namespaced_pod(namespace).items
        if p.metadata.deletion_timestamp is None and p.status.phase in ("Pending", "Running")
    ]
    bound = [p for p in pods if p.spec.node_name]
    return bound if len(bound) == count and len(pods) == count else None


def _racks(core: Any) -> dict[str, str]:
    return {
        n.metadata.name: n.metadata.labels.get(RACK, "")
        for n in core.list_node(label_selector=f"{POOL}=tas").items
    }


def _workload(custom: Any, namespace: str) -> dict[str, Any]:
    """The namespace's one Workload."""
    (workload,) = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")[
        "items"
    ]
    return dict(workload)


def _conditions(workload: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in workload["status"]["conditions"]}


def _assigned_hosts(custom: Any, namespace: str) -> list[tuple[str, int]]:
    psa = _workload(custom, namespace)["status"]["admission"]["podSetAssignments"][0]
    return [(d.values[-1], d.count) for d in decode(psa["topologyAssignment"]).domains]


def _assert_bound_as_assigned(custom: Any, namespace: str, pods: list[Any], ask: str) -> None:
    """Every pod was ungated onto its own node by the hub, and the Workload's assignment
    names exactly the nodes the pods are bound to, with their pod counts."""
    nodes = [p.spec.node_name for p in pods]
    for pod in pods:
        gates = [g.name for g in pod.spec.scheduling_gates or []]
        assert TOPOLOGY_GATE not in gates
        assert pod.spec.node_selector[HOST] == pod.spec.node_name
        assert pod.metadata.annotations[ask] == RACK
    assigned = _assigned_hosts(custom, namespace)
    assert sorted(assigned) == sorted((n, nodes.count(n)) for n in set(nodes))


def test_a_rack_constrained_job_has_all_its_pods_bound_in_one_rack(
    tas_queue: tuple[str, str], hub_process: dict[str, Any]
) -> None:
    namespace, _ = tas_queue
    worker: ClusterAccess = hub_process["worker"]
    job = _rack_job("train", pods=4, gpus=4, run_seconds=60, queue="team").suspend()
    with worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        client.BatchV1Api(api_client).create_namespaced_job(namespace, job.obj())
        pods = until(lambda: _bound_pods(core, namespace, 4), "4 pods bound to nodes", timeout=120)
        racks = _racks(core)
        nodes = sorted(p.spec.node_name for p in pods)
        assert {racks[n] for n in nodes} == {racks[nodes[0]]}, nodes  # one rack
        assert len(set(nodes)) == 2 and nodes.count(nodes[0]) == 2  # two pods per node
        _assert_bound_as_assigned(custom, namespace, pods, REQUIRED)


@pytest.mark.parametrize(
    ("gpus", "racks_used"),
    [
        pytest.param(4, 1, id="a rack has room: one rack"),
        pytest.param(8, 2, id="no rack holds 24 GPUs: spread over both racks"),
    ],
)
def test_a_job_preferring_a_rack_spreads_over_racks_only_when_no_rack_can_hold_it(
    tas_queue: tuple[str, str], hub_process: dict[str, Any], gpus: int, racks_used: int
) -> None:
    namespace, _ = tas_queue
    worker: ClusterAccess = hub_process["worker"]
    # Three pods; a rack is two 8-GPU nodes: 3 x 4 GPUs fit one rack, 3 x 8 fit none.
    job = _rack_job("train", pods=3, gpus=gpus, run_seconds=60, queue="team", ask=PREFERRED)
    with worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        client.BatchV1Api(api_client).create_namespaced_job(namespace, job.suspend().obj())
        pods = until(lambda: _bound_pods(core, namespace, 3), "3 pods bound to nodes", timeout=120)
        racks = _racks(core)
        assert len({racks[p.spec.node_name] for p in pods}) == racks_used
        _assert_bound_as_assigned(custom, namespace, pods, PREFERRED)
        assert _conditions(_workload(custom, namespace)).get("Admitted") == "True"


@pytest.fixture
def restore_nodes(hub_process: dict[str, Any]) -> Iterator[list[str]]:
    """Nodes a test deletes are created again (as kwok nodes) after it."""
    deleted: list[str] = []
    yield deleted
    worker: ClusterAccess = hub_process["worker"]
    spec = next(c for c in load_fleet_spec().workers if c.name == worker.name)
    with worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for node in node_manifests(spec):
            if node["metadata"]["name"] not in deleted:
                continue
            with contextlib.suppress(client.ApiException):
                core.create_node(node)
            core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})


def test_a_node_deleted_under_a_running_tas_job_moves_its_pods_within_the_rack(
    tas_queue: tuple[str, str], hub_process: dict[str, Any], restore_nodes: list[str]
) -> None:
    namespace, _ = tas_queue
    worker: ClusterAccess = hub_process["worker"]
    # Two 4-GPU pods, one rack: best fit puts both on one node, its rack mate stays free.
    job = _rack_job("train", pods=2, gpus=4, run_seconds=600, queue="team").backoff_limit(4)
    with worker.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        client.BatchV1Api(api_client).create_namespaced_job(namespace, job.suspend().obj())
        pods = until(lambda: _bound_pods(core, namespace, 2), "2 pods bound to nodes", timeout=120)
        (victim,) = {p.spec.node_name for p in pods}
        racks = _racks(core)
        rack_mate = next(n for n, r in racks.items() if r == racks[victim] and n != victim)
        restore_nodes.append(victim)
        core.delete_node(victim)

        until(
            lambda: _assigned_hosts(custom, namespace) == [(rack_mate, 2)] or None,
            "the assignment moved to the rack mate",
            timeout=60,
        )

        def replaced() -> list[Any] | None:
            found = _bound_pods(core, namespace, 2)
            if found and all(p.spec.node_name == rack_mate for p in found):
                return found
            return None

        # The pods on the deleted node go (pod GC), the Job makes new gated ones, and the
        # hub pins them to the rack mate.
        until(replaced, "replacement pods bound on the rack mate", timeout=180)
        workload = _workload(custom, namespace)
        conditions = _conditions(workload)
        assert conditions.get("Admitted") == "True"
        assert conditions.get("Evicted") != "True"
        assert not workload["status"].get("unhealthyNodes")


@pytest.fixture
def mk_tas_queues(
    multikueue_fleet: MultiKueueFleet, mk_namespace: str
) -> Iterator[tuple[MultiKueueFleet, str]]:
    """`tas-queue` in the namespace: on the manager a Topology, a TAS flavor and a
    ClusterQueue behind the fleet's MultiKueue check; on each worker a Topology, a TAS
    flavor on the tas pool and a 64-GPU queue."""
    mk = multikueue_fleet
    name = f"tas-{mk_namespace}"
    quotas = {"cpu": "256", "memory": "2Ti", GPU: "64"}
    manager_cq = (
        ClusterQueue(name)
        .only_namespace(mk_namespace)
        .resource_group(FlavorQuotas(f"{name}-hub", quotas))
        .obj()
    )
    manager_cq["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": mk.admission_check}]
    }
    with mk.fleet.manager.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        # A TAS flavor on the manager too, as upstream asks: the hub reserves quota and
        # leaves the placement to the worker (delayedTopologyRequest: Pending).
        create_kueue_object(custom, "topologies", _topology(name))
        create_kueue_object(custom, "resourceflavors", _tas_flavor(f"{name}-hub", name))
        create_kueue_object(custom, "clusterqueues", manager_cq)
        create_kueue_object(
            custom, "localqueues", LocalQueue("tas-queue").cluster_queue(name).obj(), mk_namespace
        )
    for worker in mk.workers:
        with worker.api_client() as api_client:
            custom = client.CustomObjectsApi(api_client)
            create_kueue_object(custom, "topologies", _topology(name))
            create_kueue_object(custom, "resourceflavors", _tas_flavor(name, name))
            worker_cq = (
                ClusterQueue(name)
                .only_namespace(mk_namespace)
                .resource_group(FlavorQuotas(name, quotas))
                .obj()
            )
            create_kueue_object(custom, "clusterqueues", worker_cq)
            create_kueue_object(
                custom,
                "localqueues",
                LocalQueue("tas-queue").cluster_queue(name).obj(),
                mk_namespace,
            )
    yield mk, name
    delete_kueue_cluster_objects(
        mk.fleet.manager,
        [("clusterqueues", name), ("resourceflavors", f"{name}-hub"), ("topologies", name)],
    )
    for worker in mk.workers:
        delete_kueue_cluster_objects(
            worker, [("clusterqueues", name), ("resourceflavors", name), ("topologies", name)]
        )


def test_multikueue_sends_a_rack_job_to_the_worker_with_a_whole_free_rack(
    mk_tas_queues: tuple[MultiKueueFleet, str], mk_namespace: str
) -> None:
    mk, _ = mk_tas_queues
    second = mk.workers[1]
    # Three full nodes in one rack: worker-1's racks have two nodes, worker-2's has three.
    job = _rack_job("allreduce", pods=3, gpus=8, run_seconds=60, queue="tas-queue")
    with ClusterView.open(mk.fleet.manager, mk_namespace) as manager:
        manager.batch.create_namespaced_job(mk_namespace, job.obj())

        def dispatched() -> str | None:
            workload = manager.workload_of_job("allreduce")
            return ((workload or {}).get("status") or {}).get("clusterName") or None

        cluster_name = until(dispatched, "the job dispatched", timeout=90)
    assert mk.worker_by_cluster_name(cluster_name).name == second.name
    with second.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        pods = until(
            lambda: _bound_pods(core, mk_namespace, 3), "3 pods bound on worker-2", timeout=120
        )
        racks = _racks(core)
        assert {racks.get(p.spec.node_name) for p in pods} == {"rack-0"}
        assert len({p.spec.node_name for p in pods}) == 3
