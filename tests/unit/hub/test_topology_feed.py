"""The manager's feed of topology inputs: Topology, Node and Pod informer events reach the
engine, so a rack request is placed against real node capacity and running pods."""

from __future__ import annotations

from typing import Any

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    ResourceGroup,
    ResourceQuota,
    TopologyRequest,
    Workload,
)
from core.manager.cluster_object_feed import ClusterObjectFeed
from core.manager.engine_host import EngineHost

RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"


def node(name: str, rack: str, *, ready: bool = True, cpu: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"pool": "tas", RACK: rack, HOST: name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, node_name: str, cpu: str, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "kube-system", "annotations": annotations},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def setup() -> tuple[EngineHost, ClusterObjectFeed]:
    host = EngineHost(EngineConfig(), clock=ManualClock())
    feed = ClusterObjectFeed(host)
    topology = {
        "metadata": {"name": "racks"},
        "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
    }
    feed.handlers("Topology").on_add(topology)
    feed.handlers("ResourceFlavor").on_add(
        {
            "metadata": {"name": "tas"},
            "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "racks"},
        }
    )
    host.engine.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="tas", resources=(ResourceQuota(name="cpu", nominal=10_000),)
                        ),
                    ),
                ),
            ),
        )
    )
    host.engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    for name, rack in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")):
        feed.handlers("Node").on_add(node(name, rack))
    return host, feed


def rack_job(name: str, pods: int) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        pod_sets=(
            PodSet(
                count=pods, requests={"cpu": 1000}, topology_request=TopologyRequest(required=RACK)
            ),
        ),
    )


def hosts_of(host: EngineHost, key: str) -> list[str]:
    status = host.engine.workload_status(key)
    assert status is not None and status.admission is not None
    assignment = status.admission.pod_set_assignments[0].topology_assignment
    assert assignment is not None
    return [d.values[-1] for d in assignment.domains]


def test_running_pods_and_node_readiness_shape_the_placement() -> None:
    host, feed = setup()
    pods = feed.handlers("Pod")
    nodes = feed.handlers("Node")
    # Rack a: a DaemonSet pod takes half a node; rack b: one node is not ready.
    pods.on_add(pod("ds-a1", "a1", "500m"))
    nodes.on_update(node("b2", "b"), node("b2", "b", ready=False))
    # A TAS pod is counted from its Workload, not as a pod.
    pods.on_add(pod("tas-a2", "a2", "1", **{"kueue.x-k8s.io/podset-required-topology": RACK}))
    host.engine.add_workload(rack_job("pair", 2))
    host.engine.schedule()
    status = host.engine.workload_status("ns/pair")
    assert status is not None and status.admission is None
    # The pod finishes (the informer drops it) and the pair fits in rack a.
    pods.on_delete(pod("ds-a1", "a1", "500m"))
    host.engine.schedule()
    assert hosts_of(host, "ns/pair") == ["a1", "a2"]


def test_a_finished_pod_gives_its_node_back() -> None:
    host, feed = setup()
    pods = feed.handlers("Pod")
    running = pod("batch", "a1", "1")
    pods.on_add(running)
    pods.on_add(pod("other", "b1", "1"))
    host.engine.add_workload(rack_job("pair", 2))
    host.engine.schedule()
    done = {**running, "status": {"phase": "Succeeded"}}
    pods.on_update(running, done)
    host.engine.schedule()
    assert hosts_of(host, "ns/pair") == ["a1", "a2"]
