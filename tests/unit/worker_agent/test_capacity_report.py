"""The WorkerCapacity report computed from node and pod dicts, flavors and queue figures."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from core.adapters.kueue_manifests import cluster_queue_from_manifest, local_queue_from_manifest
from core.api.codec import decode, encode
from core.api.worker_capacity import MAX_FREE_BLOCKS, WorkerCapacity
from core.engine.clock import ManualClock
from core.engine.dispatch.capacity_snapshot import snapshot_from_report
from core.engine.engine import Engine
from core.engine.model import Namespace, PodSet, Workload
from core.engine.model import ResourceFlavor as EngineFlavor
from devfleet.fleet_spec import load_fleet_spec, node_manifests
from worker_agent.capacity.queue_figures import ClusterQueueFigures
from worker_agent.capacity.report import build_report, report_changed, report_due

NOW = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
POOL = "fleetq.dev/node-pool"
H100 = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"}


def report(**kw: Any) -> WorkerCapacity:
    args: dict[str, Any] = {
        "cluster_name": "worker-1",
        "nodes": [],
        "pods": [],
        "flavors": [],
        "cluster_queues": [],
        "now": NOW,
    }
    args.update(kw)
    return build_report(**args)


def flavor_entry(capacity: WorkerCapacity, name: str) -> Any:
    return next(f for f in capacity.status.flavors if f.name == name)


def test_the_dev_fleets_worker_2_reports_both_pools(make_flavor: Any) -> None:
    cluster = next(c for c in load_fleet_spec().workers if c.name == "worker-2")
    nodes = node_manifests(cluster)
    for node in nodes:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    flavors = [make_flavor("a100", {POOL: "gpu"}), make_flavor("cpu", {POOL: "cpu"})]
    capacity = report(cluster_name="worker-2", nodes=nodes, flavors=flavors)
    assert capacity.metadata.name == "worker-2"
    assert capacity.spec.cluster_name == "worker-2"
    assert capacity.status.observed_time == NOW
    a100, cpu = capacity.status.flavors
    assert (a100.name, a100.node_count, cpu.name, cpu.node_count) == ("a100", 2, "cpu", 4)
    assert a100.allocatable == {"cpu": "128", "memory": "1Ti", GPU: "16", "pods": "220"}
    assert a100.requested == {"cpu": "0", "memory": "0", GPU: "0", "pods": "0"}
    assert a100.free == a100.allocatable
    assert cpu.allocatable == {"cpu": "128", "memory": "512Gi", "pods": "440"}
    assert cpu.largest_free_blocks == [{"cpu": "32", "memory": "128Gi", "pods": "110"}] * 4


def test_only_bound_unfinished_pods_count_with_their_effective_requests(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node("gpu-0", H100, labels={POOL: "gpu"})]
    pods = [
        make_pod("running", "gpu-0", {"cpu": "8", GPU: "4"}),
        make_pod("bound-pending", "gpu-0", {"cpu": "1"}, phase="Pending"),
        make_pod("done", "gpu-0", {"cpu": "16", GPU: "4"}, phase="Succeeded"),
        make_pod("failed", "gpu-0", {"cpu": "16"}, phase="Failed"),
        make_pod("unscheduled", None, {"cpu": "16", GPU: "4"}, phase="Pending"),
        # Init container needs 4 cpu before the 1-cpu app starts; overhead adds 250m.
        make_pod(
            "init", "gpu-0", {"cpu": "1"}, init_requests={"cpu": "4"}, overhead={"cpu": "250m"}
        ),
        make_pod("elsewhere", "cpu-0", {"cpu": "30"}),
    ]
    entry = flavor_entry(report(nodes=nodes, pods=pods, flavors=[make_flavor("h100", {})]), "h100")
    assert entry.requested == {"cpu": "13250m", "memory": "0", GPU: "4", "pods": "3"}
    assert entry.free == {"cpu": "50750m", "memory": "512Gi", GPU: "4", "pods": "107"}


def test_not_ready_and_cordoned_nodes_and_their_pods_do_not_count(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [
        make_node("ok", H100),
        make_node("not-ready", H100, ready="False"),
        make_node("unknown", H100, ready="Unknown"),
        make_node("cordoned", H100, unschedulable=True),
    ]
    pods = [make_pod("stuck", "not-ready", {GPU: "8"}), make_pod("live", "ok", {GPU: "2"})]
    entry = flavor_entry(report(nodes=nodes, pods=pods, flavors=[make_flavor("any", {})]), "any")
    assert entry.node_count == 1
    assert entry.allocatable[GPU] == "8"
    assert entry.requested[GPU] == "2"
    assert entry.largest_free_blocks == [{"cpu": "64", "memory": "512Gi", GPU: "6", "pods": "109"}]


def test_taints_keep_nodes_from_flavors_that_neither_declare_nor_tolerate_them(
    make_node: Any, make_flavor: Any
) -> None:
    gpu_taint = {"key": GPU, "value": "present", "effect": "NoSchedule"}
    nodes = [
        make_node("gpu-0", H100, labels={POOL: "gpu"}, taints=[gpu_taint]),
        make_node(
            "gpu-1",
            H100,
            labels={POOL: "gpu"},
            taints=[{**gpu_taint, "effect": "PreferNoSchedule"}],
        ),
        make_node(
            "gpu-2",
            H100,
            labels={POOL: "gpu"},
            taints=[{"key": "maintenance", "effect": "NoExecute"}],
        ),
    ]
    flavors = [
        make_flavor("declares", {POOL: "gpu"}, nodeTaints=[gpu_taint]),
        make_flavor("tolerates", {POOL: "gpu"}, tolerations=[{"key": GPU, "operator": "Exists"}]),
        make_flavor("plain", {POOL: "gpu"}),
    ]
    capacity = report(nodes=nodes, flavors=flavors)
    counts = {f.name: f.node_count for f in capacity.status.flavors}
    # gpu-1's PreferNoSchedule taint never excludes it; gpu-2's maintenance taint always does.
    assert counts == {"declares": 2, "plain": 1, "tolerates": 2}


def test_a_flavor_whose_labels_match_no_node_reports_nothing(
    make_node: Any, make_flavor: Any
) -> None:
    capacity = report(
        nodes=[make_node("gpu-0", H100, labels={POOL: "gpu"})],
        flavors=[make_flavor("tpu", {POOL: "tpu"})],
    )
    entry = flavor_entry(capacity, "tpu")
    assert (entry.node_count, entry.allocatable, entry.free, entry.largest_free_blocks) == (
        0,
        {},
        {},
        [],
    )
    assert encode(capacity).count(b'"tpu"') == 1


def test_blocks_rank_free_gpus_first_then_cpu_and_are_capped(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node(f"n{i:02}", H100) for i in range(MAX_FREE_BLOCKS + 4)]
    pods = [
        make_pod(f"p{i}", f"n{i:02}", {GPU: str(i % 8), "cpu": str(i)}) for i in range(len(nodes))
    ]
    entry = flavor_entry(report(nodes=nodes, pods=pods, flavors=[make_flavor("f", {})]), "f")
    assert len(entry.largest_free_blocks) == MAX_FREE_BLOCKS
    assert entry.node_count == MAX_FREE_BLOCKS + 4
    ranked = [(b[GPU], b["cpu"]) for b in entry.largest_free_blocks]
    # n00, n08, n16 have all 8 GPUs free; among them the most free cpu comes first.
    assert ranked[:3] == [("8", "64"), ("8", "56"), ("8", "48")]
    assert ranked[3:6] == [("7", "63"), ("7", "55"), ("7", "47")]
    assert ranked[-1][0] == "3"


def test_free_room_is_never_negative_and_overcommit_stays_on_its_node(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node("a", {"cpu": "4"}), make_node("b", {"cpu": "4"})]
    pods = [make_pod("hog", "a", {"cpu": "6"})]
    entry = flavor_entry(report(nodes=nodes, pods=pods, flavors=[make_flavor("f", {})]), "f")
    assert entry.requested == {"cpu": "6", "pods": "1"}
    assert entry.free == {"cpu": "4"}
    assert entry.largest_free_blocks == [{"cpu": "4"}, {"cpu": "0"}]


def test_cluster_queues_report_quota_in_their_order_with_reserved_usage() -> None:
    engine = Engine(clock=ManualClock(1000.0))
    engine.upsert_namespace(Namespace(name="ns"))
    for name in ("spot", "on-demand"):
        engine.upsert_resource_flavor(EngineFlavor(name=name))
    cq = cluster_queue_from_manifest(
        {
            "metadata": {"name": "team-a"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [
                            {
                                "name": "spot",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "8"},
                                    {"name": GPU, "nominalQuota": 0},
                                ],
                            },
                            {
                                "name": "on-demand",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "16"},
                                    {"name": GPU, "nominalQuota": 4},
                                ],
                            },
                        ],
                    }
                ],
            },
        }
    )
    engine.upsert_cluster_queue(cq)
    engine.upsert_local_queue(
        local_queue_from_manifest(
            {"metadata": {"name": "team-a", "namespace": "ns"}, "spec": {"clusterQueue": "team-a"}}
        )
    )
    for index, gpus in enumerate((2, 4)):
        engine.add_workload(
            Workload(
                namespace="ns",
                name=f"w{index}",
                uid=f"u{index}",
                queue_name="team-a",
                pod_sets=(PodSet(requests={"cpu": 1500, GPU: gpus}),),
                creation_time=float(index),
            )
        )
    engine.schedule()
    status = engine.cluster_queue_status("team-a")
    assert status is not None
    capacity = report(cluster_queues=[ClusterQueueFigures(spec=cq, status=status)])
    (entry,) = capacity.status.cluster_queues
    assert [(q.name, q.resources) for q in entry.quota] == [
        ("spot", {"cpu": "8", GPU: "0"}),
        ("on-demand", {"cpu": "16", GPU: "4"}),
    ]
    # w0 (2 GPUs) is admitted on on-demand; w1 (4 GPUs) no longer fits and waits.
    assert [(u.name, u.resources) for u in entry.usage] == [
        ("spot", {"cpu": "0", GPU: "0"}),
        ("on-demand", {"cpu": "1500m", GPU: "2"}),
    ]
    assert (entry.pending_workloads, entry.admitted_workloads) == (1, 1)


def test_the_same_cluster_gives_the_same_bytes_whatever_the_input_order(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node(f"n{i}", H100, labels={POOL: "gpu" if i % 2 else "cpu"}) for i in range(9)]
    pods = [make_pod(f"p{i}", f"n{i % 9}", {GPU: "1", "cpu": "500m"}) for i in range(30)]
    flavors = [make_flavor("gpu", {POOL: "gpu"}), make_flavor("cpu", {POOL: "cpu"})]
    first = report(nodes=nodes, pods=pods, flavors=flavors)
    shuffler = random.Random(7)
    for _ in range(5):
        shuffler.shuffle(nodes)
        shuffler.shuffle(pods)
        shuffler.shuffle(flavors)
        assert encode(report(nodes=nodes, pods=pods, flavors=flavors)) == encode(first)
    assert [f.name for f in first.status.flavors] == ["cpu", "gpu"]


def test_a_change_is_told_apart_from_a_new_observed_time(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node("n0", H100)]
    flavors = [make_flavor("f", {})]
    old = report(nodes=nodes, flavors=flavors)
    later = report(nodes=nodes, flavors=flavors, now=NOW + timedelta(seconds=5))
    assert not report_changed(old, later)
    assert report_changed(None, later)
    busier = report(nodes=nodes, flavors=flavors, pods=[make_pod("p", "n0", {GPU: "1"})])
    assert report_changed(old, busier)
    assert not report_due(old, later, NOW + timedelta(seconds=5))
    assert report_due(old, busier, NOW + timedelta(seconds=1))
    # Unchanged, but the heartbeat is due so the hub can tell a live agent from a gone one.
    assert report_due(old, later, NOW + timedelta(seconds=30))


def test_the_hub_reads_back_exactly_what_the_agent_wrote(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    nodes = [make_node(f"n{i}", H100) for i in range(3)]
    pods = [make_pod("p", "n1", {GPU: "3", "cpu": "1500m", "memory": "3Gi"})]
    written = report(nodes=nodes, pods=pods, flavors=[make_flavor("h100", {})])
    read = decode(WorkerCapacity, encode(written))
    snapshot = snapshot_from_report(read)
    assert snapshot == snapshot_from_report(written)
    h100 = snapshot.flavors["h100"]
    assert h100.free == {"cpu": 190500, "memory": 1533 * 1024**3, GPU: 21, "pods": 329}
    assert h100.blocks[-1] == {"cpu": 62500, "memory": 509 * 1024**3, GPU: 5, "pods": 109}
    assert snapshot.observed_at == NOW.timestamp()
