"""The fleet description: parsing, defaults, worker scaling and the kwok node objects."""

from __future__ import annotations

import pytest

from devfleet.fleet_spec import FleetSpecError, load_fleet_spec, node_manifests, parse_fleet_spec


def test_default_fleet_has_the_gpu_shape_the_issue_asks_for() -> None:
    spec = load_fleet_spec()
    names = [c.name for c in spec.clusters]
    assert names == ["manager", "worker-1", "worker-2"]
    gpus = {
        c.name: sum(g.count * int(g.capacity.get("nvidia.com/gpu", "0")) for g in c.node_groups)
        for c in spec.workers
    }
    # The tas pools (tainted, spread over racks) come on top of the gpu and cpu pools.
    assert gpus == {"worker-1": 64, "worker-2": 40}
    worker2 = spec.workers[1]
    assert [(g.name, g.count) for g in worker2.node_groups] == [("gpu", 2), ("cpu", 4), ("tas", 3)]


def test_more_workers_repeat_the_last_shape_and_fewer_truncate() -> None:
    spec = load_fleet_spec()
    assert [w.name for w in spec.with_worker_count(1).workers] == ["worker-1"]
    four = spec.with_worker_count(4)
    assert [w.name for w in four.workers] == ["worker-1", "worker-2", "worker-3", "worker-4"]
    assert four.workers[3].node_groups == spec.workers[1].node_groups
    assert spec.with_worker_count(0).workers == ()


def test_negative_worker_count_is_a_clear_error() -> None:
    with pytest.raises(FleetSpecError, match="--workers"):
        load_fleet_spec().with_worker_count(-1)


def test_node_manifests_are_kwok_nodes_with_capacity_and_labels() -> None:
    spec = load_fleet_spec()
    nodes = node_manifests(spec.workers[1])
    assert len(nodes) == 9
    gpu = nodes[0]
    assert gpu["metadata"]["name"] == "worker-2-gpu-0"
    assert gpu["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert gpu["metadata"]["labels"]["fleetq.dev/node-pool"] == "gpu"
    assert gpu["metadata"]["labels"]["kubernetes.io/hostname"] == "worker-2-gpu-0"
    assert gpu["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    cpu = nodes[5]
    assert "nvidia.com/gpu" not in cpu["status"]["allocatable"]


def test_a_tas_group_spreads_its_nodes_over_racks_and_is_tainted() -> None:
    nodes = node_manifests(load_fleet_spec().workers[0])
    tas = [n for n in nodes if n["metadata"]["labels"]["fleetq.dev/node-pool"] == "tas"]
    racks = [n["metadata"]["labels"]["fleetq.dev/rack"] for n in tas]
    assert racks == ["rack-0", "rack-0", "rack-1", "rack-1"]
    assert {n["metadata"]["labels"]["fleetq.dev/block"] for n in tas} == {"block-0"}
    assert all(n["spec"]["taints"][0]["key"] == "fleetq.dev/tas" for n in tas)


def test_a_topology_level_needs_a_label_and_a_positive_size() -> None:
    group = {"name": "g", "capacity": {"cpu": "1"}, "topology": [{"nodesPer": 2}]}
    with pytest.raises(FleetSpecError, match=r"topology\[0\]: a topology level needs a label"):
        parse_fleet_spec({"workers": [{"nodeGroups": [group]}]})
    group["topology"] = [{"label": "example.com/rack", "nodesPer": 0}]
    with pytest.raises(FleetSpecError, match="nodesPer must be >= 1"):
        parse_fleet_spec({"workers": [{"nodeGroups": [group]}]})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("not a mapping", "mapping"),
        ({"workers": [{"name": "a", "nodeGroups": [{"name": "x"}]}]}, "capacity"),
        ({"workers": [{"name": "a"}, {"name": "a"}]}, "duplicate"),
        ({"workers": [{"name": "manager"}]}, "duplicate"),
        (
            {
                "workers": [
                    {
                        "name": "a",
                        "nodeGroups": [{"name": "x", "count": -1, "capacity": {"cpu": "1"}}],
                    }
                ]
            },
            "count",
        ),
    ],
)
def test_malformed_descriptions_name_the_problem(data: object, message: str) -> None:
    with pytest.raises(FleetSpecError, match=message):
        parse_fleet_spec(data)


def test_taints_are_carried_to_nodes() -> None:
    spec = parse_fleet_spec(
        {
            "workers": [
                {
                    "name": "w",
                    "nodeGroups": [
                        {
                            "name": "spot",
                            "count": 1,
                            "capacity": {"cpu": "4"},
                            "taints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}],
                        }
                    ],
                }
            ]
        }
    )
    (node,) = node_manifests(spec.workers[0])
    assert node["spec"]["taints"] == [{"key": "spot", "value": "true", "effect": "NoSchedule"}]
