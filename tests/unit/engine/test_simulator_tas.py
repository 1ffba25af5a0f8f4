"""The simulator on topology-aware generator files (upstream's configs/tas format)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.simulate_command import read_generator_file
from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.simulator import GeneratorConfigError, ManagerModel, load_scenario, run_simulation
from core.engine.simulator.engine_objects import install_queues, workload

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "simulate"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"


def tas_config(*templates: dict[str, Any], racks: int = 2, hosts: int = 4) -> dict[str, Any]:
    return {
        "topology": {
            "name": "topo",
            "levels": [
                {"name": "block", "count": 1, "nodeLabel": "cloud.provider.com/topology-block"},
                {"name": "rack", "count": racks, "nodeLabel": RACK},
                {"name": "node", "count": hosts, "nodeLabel": HOST, "capacity": {"cpu": "4"}},
            ],
        },
        "resourceFlavor": {"name": "tas-flavor", "nodeLabel": "group", "topologyName": "topo"},
        "cohorts": [
            {
                "className": "cohort",
                "count": 1,
                "queuesSets": [
                    {
                        "className": "cq",
                        "count": 1,
                        "nominalQuota": "100",
                        "workloadsSets": [
                            {"count": 1, "creationIntervalMs": 10, "workloads": list(templates)}
                        ],
                    }
                ],
            }
        ],
    }


def template(name: str, constraint: str, pods: int, **extra: Any) -> dict[str, Any]:
    return {
        "className": name,
        "runtimeMs": 100,
        "request": "1",
        "podCount": pods,
        "tasConstraint": constraint,
        "tasLevel": RACK,
        **extra,
    }


def test_nodes_are_named_and_labelled_as_upstreams_runner_makes_them() -> None:
    scenario = load_scenario(tas_config(template("r", "required", 2)))
    assert scenario.topology is not None
    nodes = scenario.topology.nodes
    assert len(nodes) == 8
    assert nodes[5].name == "node-b0-r1-n1"
    assert dict(nodes[5].labels)[RACK] == "rack-1" and dict(nodes[5].labels)["group"] == "tas"
    assert dict(scenario.topology.allocatable)["cpu"] == 4000


def pods_per_rack(config: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per workload class, how many of its pods the engine placed in each rack."""
    scenario = load_scenario(config)
    engine = Engine(EngineConfig(), clock=ManualClock(0.0))
    install_queues(engine, scenario)
    for arrival in scenario.arrivals:
        engine.add_workload(workload(arrival))
    for _ in scenario.arrivals:  # one head per ClusterQueue per cycle
        engine.schedule()
    out: dict[str, dict[str, int]] = {}
    for arrival in scenario.arrivals:
        status = engine.workload_status(f"{arrival.namespace}/{arrival.name}")
        assert status is not None and status.admission is not None, arrival.name
        assignment = status.admission.pod_set_assignments[0].topology_assignment
        assert assignment is not None
        rack_of = {node.name: dict(node.labels)[RACK] for node in scenario.topology.nodes}
        per_rack = out.setdefault(arrival.class_name, {})
        for domain in assignment.domains:
            values = dict(zip(assignment.levels, domain.values, strict=True))
            rack = values.get(RACK) or _rack_of_host(scenario, values, rack_of)
            per_rack[rack] = per_rack.get(rack, 0) + domain.count
    return out


def _rack_of_host(scenario: Any, values: dict[str, str], rack_of: dict[str, str]) -> str:
    # Levels above the lowest may be left out of an assignment: find the node by its labels.
    for node in scenario.topology.nodes:
        labels = dict(node.labels)
        if all(labels.get(k) == v for k, v in values.items()):
            return rack_of[node.name]
    raise AssertionError(f"no node with {values}")


def test_required_rack_lands_in_one_rack_and_balanced_slices_each_in_one() -> None:
    racks = pods_per_rack(
        tas_config(
            template("required", "required", 4),
            template("balanced", "balanced", 8, sliceSize=4),
            template("preferred", "preferred", 2),
        )
    )
    assert len(racks["required"]) == 1
    assert len(racks["preferred"]) == 1
    # 8 pods in slices of 4, each slice inside one rack: every rack holds whole slices.
    assert sum(racks["balanced"].values()) == 8
    assert all(count % 4 == 0 for count in racks["balanced"].values())


def test_upstreams_tas_shape_runs_to_the_end() -> None:
    config = tas_config(
        template("small", "required", 2),
        template("medium", "preferred", 4),
        template("large", "balanced", 8, sliceSize=4),
    )
    config["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["count"] = 20
    summary = run_simulation(config, model=ManagerModel.instant())
    assert summary.unfinished == 0
    assert {c.class_name: c.finished for c in summary.workload_classes} == {
        "small": 20,
        "medium": 20,
        "large": 20,
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"resourceFlavor": {"name": "f", "nodeLabel": "g", "topologyName": "other"}}, "other"),
        ({"resourceFlavor": {"name": "f", "topologyName": "topo"}}, "nodeLabel"),
        ({"resourceFlavor": {"name": "f"}}, "topologyName"),
    ],
)
def test_topology_parts_that_do_not_fit_together_are_refused(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(GeneratorConfigError, match=message):
        load_scenario({**tas_config(template("r", "required", 2)), **change})


def test_a_bad_constraint_or_level_is_refused_with_its_template() -> None:
    with pytest.raises(GeneratorConfigError, match="tasConstraint"):
        load_scenario(tas_config(template("r", "packed", 2)))
    with pytest.raises(GeneratorConfigError, match="not a level"):
        load_scenario(tas_config(template("r", "required", 2, tasLevel="zone")))


def test_the_tas_example_has_upstreams_shape() -> None:
    scenario = load_scenario(read_generator_file(EXAMPLES / "tas.yaml"))
    assert scenario.topology is not None and len(scenario.topology.nodes) == 640
    assert len(scenario.arrivals) == 15_000 and len(scenario.queues) == 30
    classes = {a.class_name: a for a in scenario.arrivals}
    assert (
        classes["large-balanced-rack"].pod_count,
        classes["large-balanced-rack"].slice_size,
    ) == (8, 4)
