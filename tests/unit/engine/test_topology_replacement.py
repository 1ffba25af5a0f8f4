"""Failed-node replacement through the Engine: only the failed node's pods move, a
required domain is kept, the failed node is never chosen, no fit evicts."""

from __future__ import annotations

from core.engine.engine import Engine
from core.engine.model import Node, TopologyRequest
from tests.unit.engine.test_topology_scheduling import HOST, RACK, job, placed, racks_engine


def _evicted_message(e: Engine, key: str) -> str:
    status = e.workload_status(key)
    assert status is not None
    cond = status.condition("Evicted")
    assert cond is not None and cond.status and cond.reason == "NodeFailures"
    return str(cond.message)


def test_the_failed_nodes_pods_move_inside_the_required_rack_and_the_rest_stay() -> None:
    e = racks_engine(hosts=3)
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    before = placed(e, "ns/a")
    assert before == [("r0-h0", 1), ("r0-h1", 1)]
    e.delete_node("r0-h0")
    changes = e.replace_failed_node("ns/a", "r0-h0")
    assert "ns/a" in changes
    assert placed(e, "ns/a") == [("r0-h1", 1), ("r0-h2", 1)]


def test_a_required_rack_without_room_evicts_even_when_another_rack_is_free() -> None:
    e = racks_engine(hosts=2)
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    e.delete_node("r0-h0")
    e.replace_failed_node("ns/a", "r0-h0")
    assert _evicted_message(e, "ns/a") == (
        "Workload was evicted as there was no replacement for unhealthy node(s): r0-h0"
    )


def test_a_preferred_rack_may_move_its_pods_to_another_rack() -> None:
    e = racks_engine(hosts=2)
    e.add_workload(job("a", 2, TopologyRequest(preferred=RACK)))
    e.schedule()
    e.delete_node("r0-h0")
    e.replace_failed_node("ns/a", "r0-h0")
    hosts = [h for h, _ in placed(e, "ns/a")]
    assert "r0-h0" not in hosts and "r0-h1" in hosts and len(hosts) == 2


def test_a_node_still_listed_but_tainted_is_never_chosen_again() -> None:
    e = racks_engine(hosts=2)
    e.add_workload(job("a", 1, TopologyRequest(required=RACK)))
    e.schedule()
    (host, _), *_ = placed(e, "ns/a")
    e.replace_failed_node("ns/a", host)  # the node is still in the topology
    assert host not in [h for h, _ in placed(e, "ns/a")]


def test_the_moved_usage_frees_the_failed_node_and_holds_the_new_one() -> None:
    e = racks_engine(hosts=3, racks=1)
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    e.replace_failed_node("ns/a", "r0-h0")
    assert placed(e, "ns/a") == [("r0-h1", 1), ("r0-h2", 1)]
    # r0-h0 is free again (the node came back healthy): a 1-pod job fits only there.
    e.upsert_node(
        Node(
            name="r0-h0",
            labels={"pool": "tas", RACK: "r0", HOST: "r0-h0"},
            allocatable={"cpu": 1000, "pods": 10},
        )
    )
    e.add_workload(job("b", 1, TopologyRequest(required=RACK)))
    e.schedule()
    assert placed(e, "ns/b") == [("r0-h0", 1)]


def test_a_workload_whose_assignment_does_not_name_the_node_is_left_alone() -> None:
    e = racks_engine(hosts=2)
    e.add_workload(job("a", 2, TopologyRequest(required=RACK)))
    e.schedule()
    assert e.replace_failed_node("ns/a", "r1-h0") == {}
    assert placed(e, "ns/a") == [("r0-h0", 1), ("r0-h1", 1)]
