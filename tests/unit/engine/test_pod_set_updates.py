"""Flavor labels and tolerations handed to the job at admission."""

from __future__ import annotations

import pytest

from core.engine.model import Admission, PodSetAssignment, ResourceFlavor, Toleration
from core.engine.pod_set_updates import PodSetUpdateConflict, pod_set_updates

FLAVORS = {
    "a100": ResourceFlavor(
        name="a100",
        node_labels={"gpu": "a100", "pool": "gpu"},
        tolerations=(Toleration(key="gpu", operator="Exists", effect="NoSchedule"),),
    ),
    "default": ResourceFlavor(name="default", node_labels={"pool": "gpu"}),
}


def admission(**flavors: str) -> Admission:
    return Admission(
        cluster_queue="cq",
        pod_set_assignments=(
            PodSetAssignment(name="main", flavors=flavors, resource_usage={}, count=1),
        ),
    )


def test_labels_and_tolerations_of_every_assigned_flavor() -> None:
    updates = pod_set_updates(admission(cpu="default", **{"nvidia.com/gpu": "a100"}), FLAVORS)
    assert updates["main"].node_selector == {"gpu": "a100", "pool": "gpu"}
    assert updates["main"].tolerations == [FLAVORS["a100"].tolerations[0]]


def test_keys_the_template_already_sets_are_not_repeated() -> None:
    updates = pod_set_updates(admission(cpu="a100"), FLAVORS, {"main": {"pool": "gpu"}})
    assert updates["main"].node_selector == {"gpu": "a100"}


def test_conflicting_selector_is_reported() -> None:
    with pytest.raises(PodSetUpdateConflict, match="pool=gpu"):
        pod_set_updates(admission(cpu="a100"), FLAVORS, {"main": {"pool": "cpu"}})
