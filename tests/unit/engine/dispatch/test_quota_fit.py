"""Mirroring the worker's flavor choice from the quota a report carries."""

from __future__ import annotations

from core.engine.dispatch.capacity_snapshot import QueueSnapshot
from core.engine.dispatch.fit_verdict import FitReason
from core.engine.dispatch.quota_fit import QuotaShortfall, assign_flavors
from core.engine.model import PodSet, ResourceFlavor, Taint, Toleration

GPU = "nvidia.com/gpu"


def queue(
    quota: list[tuple[str, dict[str, int]]], usage: dict[str, dict[str, int]] | None = None
) -> QueueSnapshot:
    return QueueSnapshot(name="team-a", quota=tuple(quota), usage=usage or {})


def test_resource_groups_are_recovered_and_each_gets_its_first_fitting_flavor() -> None:
    q = queue(
        [
            ("default", {"cpu": 64000, "memory": 256}),
            ("h100", {GPU: 8}),
            ("a100", {GPU: 16}),
        ],
        usage={"h100": {GPU: 4}},
    )
    plan = assign_flavors((PodSet(requests={"cpu": 1000, GPU: 8}),), q)
    assert plan == ({"cpu": "default", GPU: "a100"},)


def test_the_pods_resource_counts_pods_when_the_queue_covers_it() -> None:
    q = queue([("default", {"cpu": 100000, "pods": 10})])
    assert assign_flavors((PodSet(count=10, requests={"cpu": 100}),), q) == (
        {"cpu": "default", "pods": "default"},
    )
    shortfall = assign_flavors((PodSet(count=11, requests={"cpu": 100}),), q)
    assert isinstance(shortfall, QuotaShortfall)
    assert shortfall.reason is FitReason.EXCEEDS_NOMINAL_QUOTA
    assert "pods in flavor default: 11 needed, nominal quota is 10" in shortfall.message


def test_over_admitted_quota_is_reported_as_in_use_not_as_too_small() -> None:
    q = queue([("default", {"cpu": 4000})], usage={"default": {"cpu": 6000}})
    shortfall = assign_flavors((PodSet(requests={"cpu": 1000}),), q)
    assert isinstance(shortfall, QuotaShortfall)
    assert shortfall.reason is FitReason.INSUFFICIENT_UNUSED_QUOTA
    assert shortfall.message.endswith(
        "insufficient unused quota for cpu in flavor default, 1 more needed"
    )


def test_flavor_definitions_narrow_the_choice_like_the_worker_would() -> None:
    q = queue([("spot", {"cpu": 8000}), ("on-demand", {"cpu": 8000})])
    specs = {
        "spot": ResourceFlavor(
            name="spot",
            node_labels={"pool": "spot"},
            node_taints=(Taint(key="spot", value="true"),),
        ),
        "on-demand": ResourceFlavor(name="on-demand", node_labels={"pool": "on-demand"}),
    }
    plain = PodSet(requests={"cpu": 1000})
    assert assign_flavors((plain,), q, specs) == ({"cpu": "on-demand"},)
    tolerant = PodSet(
        requests={"cpu": 1000}, tolerations=(Toleration(key="spot", operator="Exists"),)
    )
    assert assign_flavors((tolerant,), q, specs) == ({"cpu": "spot"},)
    pinned = PodSet(requests={"cpu": 1000}, node_selector={"pool": "gpu"})
    shortfall = assign_flavors((pinned,), q, specs)
    assert isinstance(shortfall, QuotaShortfall)
    assert shortfall.reason is FitReason.NO_ELIGIBLE_FLAVOR
    assert shortfall.message == (
        "pod set main: untolerated taint spot=true:NoSchedule in flavor spot;"
        " flavor on-demand doesn't match node affinity"
    )
    missing = assign_flavors((plain,), q, {"spot": specs["spot"]})
    assert isinstance(missing, QuotaShortfall)
    assert "flavor on-demand not found" in missing.message
