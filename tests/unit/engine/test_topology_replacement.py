"""Failed-node replacement through the Engine: only the failed node's pods move, a
required domain is kept, every slice stays inside one domain of its slice level, the
failed node is never chosen, no fit evicts."""

from __future__ import annotations

from core.engine.engine import Engine
from core.engine.model import Node, SliceLayer, TopologyRequest
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


def _racks_of(e: Engine, key: str) -> dict[str, int]:
    """Pods per rack of the workload's assignment (hosts are named `<rack>-h<i>`)."""
    per_rack: dict[str, int] = {}
    for host, count in placed(e, key):
        rack = host.partition("-")[0]
        per_rack[rack] = per_rack.get(rack, 0) + count
    return per_rack


RACK_PAIRS = TopologyRequest(slices=(SliceLayer(level=RACK, size=2),))
"""Every 2 pods in one rack, the pairs anywhere (`podset-slice-required-topology: rack`,
`podset-slice-size: 2`, no other constraint)."""


def test_a_pod_of_a_broken_slice_goes_back_to_its_slices_rack() -> None:
    # Three racks of three 1-pod hosts; a pair fills r0-h0/h1 and the other r1-h0/h1, so
    # r0-h2, r1-h2 and all of r2 are free. r1-h0 fails: its pod's mate stays in r1, so the
    # pod must come back to r1 (r1-h2), though r0-h2 sorts first and r2 is emptier.
    e = racks_engine(racks=3, hosts=3)
    e.add_workload(job("a", 4, RACK_PAIRS))
    e.schedule()
    before = _racks_of(e, "ns/a")
    assert sorted(before.values()) == [2, 2] and all(n % 2 == 0 for n in before.values())
    *_, victim_rack = sorted(before)  # the later rack: the free r0-h2 sorts first
    victim = next(h for h, _ in placed(e, "ns/a") if h.startswith(f"{victim_rack}-"))
    e.replace_failed_node("ns/a", victim)
    after = _racks_of(e, "ns/a")
    assert after == before, placed(e, "ns/a")
    assert victim not in [h for h, _ in placed(e, "ns/a")]


def test_a_broken_slice_with_no_room_left_in_its_rack_evicts_the_workload() -> None:
    # Two-host racks: each pair fills its rack, so the pod of the failed node has nowhere
    # to go in its own rack; a free rack elsewhere would split the pair, so it is evicted.
    e = racks_engine(racks=3, hosts=2)
    e.add_workload(job("a", 4, RACK_PAIRS))
    e.schedule()
    (host, _), *_ = placed(e, "ns/a")
    e.delete_node(host)
    e.replace_failed_node("ns/a", host)
    assert _evicted_message(e, "ns/a") == (
        f"Workload was evicted as there was no replacement for unhealthy node(s): {host}"
    )


def test_whole_slices_on_the_failed_node_move_as_whole_slices_to_any_rack() -> None:
    # 2-pod hosts, one per rack: each pair sits on one host. When one host fails its pair
    # (a whole slice) may go to the free rack, still together.
    e = racks_engine(racks=3, hosts=1, cpu=2000)
    e.add_workload(job("a", 4, RACK_PAIRS))
    e.schedule()
    assert sorted(_racks_of(e, "ns/a").values()) == [2, 2]
    (host, _), *_ = placed(e, "ns/a")
    e.delete_node(host)
    e.replace_failed_node("ns/a", host)
    after = _racks_of(e, "ns/a")
    assert sorted(after.values()) == [2, 2] and host.partition("-")[0] not in after


def test_pods_breaking_only_the_outer_slice_stay_in_its_rack_as_inner_slices() -> None:
    # Every 4 pods in one rack, every 2 on one host; 2-pod hosts. A 1-pod filler takes
    # r0-h0, the 4-pod job the fuller rack r0 (h1, h2). r0-h1 fails: its 2 pods are a
    # whole host pair but half of the rack's 4, so they must stay in r0 on one host, and
    # r0 has none free (r1 has three): evicted rather than split over racks.
    e = racks_engine(racks=2, hosts=3, cpu=2000)
    e.add_workload(job("filler", 1, TopologyRequest(required=RACK)))
    e.schedule()
    assert placed(e, "ns/filler") == [("r0-h0", 1)]
    layers = (SliceLayer(level=RACK, size=4), SliceLayer(level=HOST, size=2))
    e.add_workload(job("a", 4, TopologyRequest(slices=layers), created=1.0))
    e.schedule()
    assert placed(e, "ns/a") == [("r0-h1", 2), ("r0-h2", 2)]
    e.replace_failed_node("ns/a", "r0-h1")
    assert "r0-h1" in _evicted_message(e, "ns/a")
