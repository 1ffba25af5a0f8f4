"""Per-domain free capacity of TAS flavors in the WorkerCapacity report, and the hub's
verdict for a rack-constrained job read from it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.adapters.kueue_manifests import cluster_queue_from_manifest
from core.api.worker_capacity import MAX_DOMAINS_PER_LEVEL
from core.engine.dispatch.capacity_fit import assess_worker
from core.engine.dispatch.capacity_snapshot import snapshot_from_report
from core.engine.dispatch.fit_verdict import FitReason, FitVerdict
from core.engine.model import ClusterQueueStatus, PodSet, TopologyRequest
from worker_agent.capacity.queue_figures import ClusterQueueFigures
from worker_agent.capacity.report import build_report

NOW = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
POOL = "fleetq.dev/node-pool"
BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
GPU_NODE = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"}
TOPOLOGIES = {"gpu-racks": [BLOCK, RACK, HOST]}


def _tas_nodes(make_node: Any, racks: dict[str, int]) -> list[dict[str, Any]]:
    return [
        make_node(f"{rack}-{i}", GPU_NODE, labels={POOL: "tas", BLOCK: "b1", RACK: rack})
        for rack, count in racks.items()
        for i in range(count)
    ]


def _queue() -> ClusterQueueFigures:
    spec = cluster_queue_from_manifest(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [
                            {
                                "name": "tas",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "1000"},
                                    {"name": GPU, "nominalQuota": "1000"},
                                ],
                            }
                        ],
                    }
                ]
            },
        }
    )
    status = ClusterQueueStatus(
        pending_workloads=0,
        reserving_workloads=0,
        admitted_workloads=0,
        flavors_reservation=(),
        flavors_usage=(),
        weighted_share=0,
        conditions=(),
    )
    return ClusterQueueFigures(spec=spec, status=status)


def _report(make_node: Any, make_pod: Any, make_flavor: Any, busy: int) -> Any:
    nodes = _tas_nodes(make_node, {"r1": 4, "r2": 4})
    pods = [make_pod(f"p{i}", f"r1-{i}", {GPU: "8"}) for i in range(busy)]
    flavor = make_flavor("tas", {POOL: "tas"}, topologyName="gpu-racks")
    return build_report(
        cluster_name="w",
        nodes=nodes,
        pods=pods,
        flavors=[flavor],
        cluster_queues=[_queue()],
        now=NOW,
        topologies=TOPOLOGIES,
    )


def test_a_tas_flavor_reports_free_room_per_block_and_rack_largest_first(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    report = _report(make_node, make_pod, make_flavor, busy=1)
    topology = report.status.flavors[0].topology
    assert topology is not None and topology.topology_name == "gpu-racks"
    blocks, racks = topology.levels
    assert (blocks.node_label, blocks.domain_count, racks.node_label) == (BLOCK, 1, RACK)
    assert [d.values for d in racks.domains] == [["b1", "r2"], ["b1", "r1"]]
    r2, r1 = racks.domains
    assert (r2.node_count, r2.free[GPU], r1.free[GPU]) == (4, "32", "24")
    assert len(r1.largest_free_blocks) == 4


def test_a_flavor_without_a_topology_reports_no_domains(make_node: Any, make_flavor: Any) -> None:
    report = build_report(
        cluster_name="w",
        nodes=_tas_nodes(make_node, {"r1": 1}),
        pods=[],
        flavors=[make_flavor("tas", {POOL: "tas"})],
        cluster_queues=[],
        now=NOW,
        topologies=TOPOLOGIES,
    )
    assert report.status.flavors[0].topology is None


def test_domains_per_level_are_bounded(make_node: Any, make_flavor: Any) -> None:
    racks = {f"r{i:02}": 1 for i in range(MAX_DOMAINS_PER_LEVEL + 5)}
    report = build_report(
        cluster_name="w",
        nodes=_tas_nodes(make_node, racks),
        pods=[],
        flavors=[make_flavor("tas", {POOL: "tas"}, topologyName="gpu-racks")],
        cluster_queues=[],
        now=NOW,
        topologies=TOPOLOGIES,
    )
    topology = report.status.flavors[0].topology
    assert topology is not None
    level = topology.levels[1]
    assert level.domain_count == MAX_DOMAINS_PER_LEVEL + 5
    assert len(level.domains) == MAX_DOMAINS_PER_LEVEL


def _job(pods: int, request: TopologyRequest | None) -> list[PodSet]:
    return [PodSet(count=pods, requests={GPU: 8}, topology_request=request)]


def _verdict(report: Any, pod_sets: list[PodSet]) -> Any:
    return assess_worker(
        pod_sets,
        worker="w",
        snapshot=snapshot_from_report(report),
        cluster_queue="cq",
        now=NOW.timestamp(),
    )


def test_a_rack_constrained_job_fits_only_a_worker_with_a_whole_free_rack(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    one_rack_free = _report(make_node, make_pod, make_flavor, busy=1)
    assert _verdict(one_rack_free, _job(4, TopologyRequest(required=RACK))).verdict is (
        FitVerdict.FITS
    )
    # Five pods fit the worker (seven free nodes) but no rack of four.
    fit = _verdict(one_rack_free, _job(5, TopologyRequest(required=RACK)))
    assert (fit.verdict, fit.reason) == (
        FitVerdict.DOES_NOT_FIT,
        FitReason.TOPOLOGY_DOMAIN_TOO_SMALL,
    )
    assert (
        fit.message
        == "pod set main: no example.com/rack domain of flavor tas has room for its 5 pods"
    )
    assert _verdict(one_rack_free, _job(5, TopologyRequest(preferred=RACK))).verdict is (
        FitVerdict.FITS
    )


def test_a_level_the_workers_topology_lacks_never_fits_and_hostname_means_one_node(
    make_node: Any, make_pod: Any, make_flavor: Any
) -> None:
    busy = _report(make_node, make_pod, make_flavor, busy=1)
    fit = _verdict(busy, _job(1, TopologyRequest(required="example.com/zone")))
    assert (fit.verdict, fit.reason) == (FitVerdict.DOES_NOT_FIT, FitReason.NO_TOPOLOGY_LEVEL)
    assert _verdict(busy, _job(1, TopologyRequest(required=HOST))).verdict is FitVerdict.FITS
    two_on_one_node = _verdict(busy, _job(2, TopologyRequest(required=HOST)))
    assert two_on_one_node.reason is FitReason.TOPOLOGY_DOMAIN_TOO_SMALL


def test_the_hub_reads_a_workloads_topology_request_for_the_verdict() -> None:
    from hub.multikueue.dispatch.capacity_dispatcher import pod_sets_of

    (pod_set,) = pod_sets_of(
        {
            "spec": {
                "podSets": [
                    {
                        "name": "main",
                        "count": 3,
                        "template": {},
                        "topologyRequest": {"required": RACK},
                    }
                ]
            }
        }
    )
    assert pod_set.topology_request is not None
    assert pod_set.topology_request.required == RACK
