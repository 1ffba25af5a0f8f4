"""First-fit-decreasing of pods onto reported free blocks, and past them."""

from __future__ import annotations

from core.engine.dispatch.capacity_snapshot import FlavorSnapshot
from core.engine.dispatch.node_packing import PodGroup, copies_that_fit, pack, room_after

GPU = "nvidia.com/gpu"


def flavor(
    *blocks: dict[str, int], node_count: int | None = None, free: dict[str, int] | None = None
) -> FlavorSnapshot:
    total: dict[str, int] = {}
    for block in blocks:
        for resource, amount in block.items():
            total[resource] = total.get(resource, 0) + amount
    return FlavorSnapshot(
        name="f",
        node_count=len(blocks) if node_count is None else node_count,
        free=total if free is None else free,
        blocks=tuple(blocks),
    )


def test_largest_pods_are_placed_first_whatever_the_pod_set_order() -> None:
    # In the given order (2, 2, 3, 3) first-fit would strand a 3; decreasing order fits all.
    groups = [
        PodGroup(pod_set="small", requests={GPU: 2}, count=2),
        PodGroup(pod_set="large", requests={GPU: 3}, count=2),
    ]
    assert pack(groups, flavor({GPU: 5}, {GPU: 5})) is None
    shortfall = pack(
        [*groups, PodGroup(pod_set="extra", requests={GPU: 1}, count=1)], flavor({GPU: 5}, {GPU: 5})
    )
    assert shortfall is not None
    assert (shortfall.pod_set, shortfall.placed, shortfall.count) == ("extra", 0, 1)


def test_blocks_are_consumed_across_pod_sets() -> None:
    groups = [
        PodGroup(pod_set="driver", requests={GPU: 8, "cpu": 4000}, count=1),
        PodGroup(pod_set="workers", requests={GPU: 8, "cpu": 4000}, count=2),
    ]
    shortfall = pack(groups, flavor({GPU: 8, "cpu": 64000}, {GPU: 8, "cpu": 64000}))
    assert shortfall is not None
    assert (shortfall.pod_set, shortfall.placed, shortfall.count) == ("workers", 1, 2)


def test_every_resource_must_fit_on_the_same_node() -> None:
    # 8 GPUs free on one node, 32 cpu on another: a pod wanting both fits neither.
    groups = [PodGroup(pod_set="main", requests={GPU: 8, "cpu": 32000}, count=1)]
    assert pack(groups, flavor({GPU: 8, "cpu": 2000}, {GPU: 0, "cpu": 32000})) is not None
    assert pack(groups, flavor({GPU: 8, "cpu": 32000})) is None


def test_a_resource_the_node_does_not_list_is_not_there_except_pods() -> None:
    assert copies_that_fit({"cpu": 4000}, {GPU: 1}, 10) == 0
    assert copies_that_fit({"cpu": 4000}, {"cpu": 1000}, 10) == 4
    assert copies_that_fit({"cpu": 4000, "pods": 3}, {"cpu": 1000}, 10) == 3
    assert copies_that_fit({"pods": 2}, {}, 10) == 2
    assert copies_that_fit({}, {}, 10) == 10


def test_pod_slots_limit_how_many_pods_a_node_takes() -> None:
    groups = [PodGroup(pod_set="main", requests={"cpu": 100}, count=3)]
    shortfall = pack(groups, flavor({"cpu": 64000, "pods": 2}))
    assert shortfall is not None and shortfall.placed == 2


def test_nodes_past_the_reported_blocks_take_pods_from_the_summed_remainder() -> None:
    blocks = [{"cpu": 4000} for _ in range(16)]
    # 20 nodes: 16 reported with 4 cpu free, 4 unreported with 2 cpu free each.
    snapshot = flavor(*blocks, node_count=20, free={"cpu": 16 * 4000 + 4 * 2000})
    fits = [PodGroup(pod_set="main", requests={"cpu": 1000}, count=72)]
    assert pack(fits, snapshot) is None
    too_many = [PodGroup(pod_set="main", requests={"cpu": 1000}, count=73)]
    shortfall = pack(too_many, snapshot)
    assert shortfall is not None and shortfall.placed == 72


def test_a_pod_larger_than_the_smallest_reported_block_cannot_use_the_remainder() -> None:
    blocks = [{GPU: 8}, {GPU: 2}]
    # Two more nodes unreported, 4 GPUs between them: each has at most 2 (ranked lower).
    snapshot = flavor(*blocks, node_count=4, free={GPU: 14})
    pods = [PodGroup(pod_set="main", requests={GPU: 4}, count=3)]
    shortfall = pack(pods, snapshot)
    assert shortfall is not None and shortfall.placed == 2
    assert pack([PodGroup(pod_set="main", requests={GPU: 2}, count=7)], snapshot) is None


def test_pods_with_no_requests_or_no_count_need_only_a_pod_slot() -> None:
    assert pack([PodGroup(pod_set="idle", requests={}, count=3)], flavor({"pods": 3})) is None
    assert pack([PodGroup(pod_set="none", requests={GPU: 99}, count=0)], flavor({GPU: 1})) is None


def test_room_after_takes_placed_pods_from_blocks_and_free_and_ranks_blocks_again() -> None:
    flavor = FlavorSnapshot(
        name="gpu",
        node_count=3,
        free={GPU: 20},
        blocks=({GPU: 8}, {GPU: 8}, {GPU: 4}),
    )
    after = room_after([PodGroup(pod_set="main", requests={GPU: 6}, count=2)], flavor)
    assert after.blocks == ({GPU: 4}, {GPU: 2}, {GPU: 2})
    assert after.free == {GPU: 8}
    # A pod that finds no room is left out; what fits is still taken.
    crowded = room_after(
        [
            PodGroup(pod_set="big", requests={GPU: 16}, count=1),
            PodGroup(pod_set="small", requests={GPU: 4}, count=1),
        ],
        flavor,
    )
    assert crowded.blocks == ({GPU: 8}, {GPU: 4}, {GPU: 4})
    assert crowded.free == {GPU: 16}
    assert pack([PodGroup(pod_set="main", requests={GPU: 8}, count=2)], after) is not None
