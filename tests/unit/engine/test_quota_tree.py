"""Quota math of the tree: available, potential available, borrowing levels, usage bubbling."""

from __future__ import annotations

import random

import pytest

from core.engine.quota_tree import (
    Quota,
    QuotaNode,
    QuotaTree,
    add_usage,
    available,
    fits,
    lowest_fitting_subtree_height,
    potential_available,
    refresh_subtree,
    remove_usage,
)

CPU = ("default", "cpu")


def flat(
    a: Quota, b: Quota, cohort_quota: Quota | None = None
) -> tuple[QuotaTree, QuotaNode, QuotaNode]:
    tree = QuotaTree()
    if cohort_quota is not None:
        tree.set_cohort("team", None, {CPU: cohort_quota}, 1.0)
    qa = tree.set_cluster_queue("a", {CPU: a}, "team", 1.0)
    qb = tree.set_cluster_queue("b", {CPU: b}, "team", 1.0)
    return tree, qa, qb


def test_cohort_pools_nominal_quota() -> None:
    tree, a, _ = flat(Quota(4), Quota(6))
    assert tree.cohorts["team"].subtree_quota[CPU] == 10
    assert available(a, CPU) == 10
    assert potential_available(a, CPU) == 10


def test_borrowing_limit_caps_available_and_potential() -> None:
    _, a, _ = flat(Quota(4, borrowing_limit=1), Quota(6))
    assert available(a, CPU) == 5
    assert potential_available(a, CPU) == 5
    add_usage(a, CPU, 5)
    assert available(a, CPU) == 0


def test_lending_limit_keeps_quota_local() -> None:
    _, a, b = flat(Quota(4), Quota(6, lending_limit=2))
    assert potential_available(a, CPU) == 6
    assert potential_available(b, CPU) == 10
    add_usage(a, CPU, 6)
    # b's 4 unlent units are still there for b alone.
    assert available(b, CPU) == 4
    assert fits(b, {CPU: 4})
    assert not fits(b, {CPU: 5})


def test_usage_bubbles_only_past_local_quota() -> None:
    tree, _, b = flat(Quota(4), Quota(6, lending_limit=2))
    cohort = tree.cohorts["team"]
    add_usage(b, CPU, 3)
    assert cohort.usage.get(CPU, 0) == 0  # within b's 4 local units
    add_usage(b, CPU, 3)
    assert cohort.usage[CPU] == 2
    remove_usage(b, CPU, 5)
    assert b.usage[CPU] == 1
    assert cohort.usage.get(CPU, 0) == 0


def test_available_goes_negative_when_over_admitted() -> None:
    tree, a, _ = flat(Quota(4), Quota(4))
    add_usage(a, CPU, 8)
    tree.set_cluster_queue("b", {CPU: Quota(1)}, "team", 1.0)
    assert available(a, CPU) == -3
    assert not fits(a, {CPU: 1})


def test_cohort_own_quota_and_parent_limits() -> None:
    tree = QuotaTree()
    tree.set_cohort("root", None, {}, 1.0)
    tree.set_cohort("left", "root", {CPU: Quota(1, borrowing_limit=1)}, 1.0)
    tree.set_cohort("right", "root", {CPU: Quota(6)}, 1.0)
    leaf = tree.set_cluster_queue("cq", {CPU: Quota(0)}, "left", 1.0)
    assert tree.cohorts["root"].subtree_quota[CPU] == 7
    assert potential_available(leaf, CPU) == 2
    assert available(leaf, CPU) == 2


def test_borrowing_level_is_height_of_first_fitting_subtree() -> None:
    tree = QuotaTree()
    tree.set_cohort("root", None, {}, 1.0)
    tree.set_cohort("left", "root", {}, 1.0)
    tree.set_cohort("right", "root", {}, 1.0)
    l1 = tree.set_cluster_queue("l1", {CPU: Quota(2)}, "left", 1.0)
    l2 = tree.set_cluster_queue("l2", {CPU: Quota(0)}, "left", 1.0)
    tree.set_cluster_queue("r", {CPU: Quota(4)}, "right", 1.0)
    assert lowest_fitting_subtree_height(l1, CPU, 2) == (0, True)
    assert lowest_fitting_subtree_height(l2, CPU, 2) == (1, True)
    assert lowest_fitting_subtree_height(l2, CPU, 5) == (2, False)


def test_cycle_is_detected_and_healed() -> None:
    tree = QuotaTree()
    tree.set_cohort("a", "b", {}, 1.0)
    tree.set_cohort("b", "a", {}, 1.0)
    assert tree.cycle_roots == {"a", "b"}
    assert tree.cycle_of("a") == ["a", "b", "a"]
    tree.set_cohort("b", None, {}, 1.0)
    assert tree.cycle_roots == set()


def test_implicit_cohorts_disappear_when_unreferenced() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("cq", {CPU: Quota(1)}, "implicit", 1.0)
    assert "implicit" in tree.cohorts
    tree.set_cluster_queue("cq", {CPU: Quota(1)}, None, 1.0)
    assert "implicit" not in tree.cohorts


@pytest.mark.parametrize("seed", range(20))
def test_incremental_usage_matches_full_recomputation(seed: int) -> None:
    """Adding/removing usage in O(depth) must equal recomputing the tree from scratch."""
    rng = random.Random(seed)
    tree = QuotaTree()
    tree.set_cohort("root", None, {CPU: Quota(rng.randint(0, 4))}, 1.0)
    for name in ("x", "y"):
        tree.set_cohort(
            name,
            "root",
            {CPU: Quota(rng.randint(0, 4), lending_limit=rng.choice([None, 0, 1, 3]))},
            1.0,
        )
    leaves = []
    for i in range(5):
        quota = Quota(rng.randint(0, 6), lending_limit=rng.choice([None, 0, 2, 5]))
        leaves.append(
            tree.set_cluster_queue(f"cq{i}", {CPU: quota}, rng.choice(["x", "y", "root"]), 1.0)
        )
    charged: list[tuple[QuotaNode, int]] = []
    for _ in range(60):
        if charged and rng.random() < 0.4:
            leaf, val = charged.pop(rng.randrange(len(charged)))
            remove_usage(leaf, CPU, val)
        else:
            leaf, val = rng.choice(leaves), rng.randint(1, 4)
            add_usage(leaf, CPU, val)
            charged.append((leaf, val))
        incremental = {n.name: n.usage.get(CPU, 0) for n in tree.cohorts.values()}
        refresh_subtree(tree.cohorts["root"])
        recomputed = {n.name: n.usage.get(CPU, 0) for n in tree.cohorts.values()}
        assert incremental == recomputed
