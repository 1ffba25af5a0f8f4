"""`fleetq describe workload` shows where TAS placed each pod set, decoded from upstream's
compact topologyAssignment."""

from __future__ import annotations

from typing import Any

from cli.ops.describe_command import story_facts
from cli.ops.workload_story import tell_story
from core.adapters.topology_encoding import encode
from core.api.codec import decode
from core.api.workload import Workload
from core.engine.model import TopologyAssignment, TopologyDomainAssignment

HOST = "kubernetes.io/hostname"


def _workload(psa: dict[str, Any], unhealthy: tuple[str, ...] = ()) -> Workload:
    return decode(
        Workload,
        {
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3, "template": {}}]},
            "status": {
                "admission": {"clusterQueue": "cq", "podSetAssignments": [psa]},
                "unhealthyNodes": [{"name": n} for n in unhealthy],
            },
        },
    )


def test_the_domains_and_pod_counts_of_the_assignment_are_told() -> None:
    assignment = encode(
        TopologyAssignment(
            levels=(HOST,),
            domains=(
                TopologyDomainAssignment(values=("gpu-r1-0",), count=2),
                TopologyDomainAssignment(values=("gpu-r1-1",), count=1),
            ),
        )
    )
    story = tell_story(
        _workload({"name": "main", "count": 3, "topologyAssignment": assignment}, ("gpu-r1-2",)),
        {},
        None,
    )
    assert [(d.values, d.pods) for d in story.topology[0].domains] == [
        (["gpu-r1-0"], 2),
        (["gpu-r1-1"], 1),
    ]
    facts = dict(story_facts(story))
    assert facts["Topology:"] == (
        "main: kubernetes.io/hostname: gpu-r1-0 (2 pods), gpu-r1-1 (1 pod)"
    )
    assert facts["Failed nodes:"] == "gpu-r1-2 (pods being moved)"


def test_a_placement_left_to_the_worker_says_so() -> None:
    story = tell_story(
        _workload({"name": "main", "count": 3, "delayedTopologyRequest": "Pending"}), {}, None
    )
    assert dict(story_facts(story))["Topology:"] == ("main: placement Pending (made where it runs)")
