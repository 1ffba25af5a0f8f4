"""MultiKueueClusterSet: decoding, validation, membership, and the Active condition of a
MultiKueue check that names one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.admission_check import AdmissionCheck
from core.api.codec import decode
from core.api.crdgen.schema import root_schema
from core.api.meta import Condition, ConditionStatus
from core.api.multikueue import MultiKueueCluster
from core.api.multikueue_cluster_set import MultiKueueClusterSet
from core.api.validation import validate
from hub.multikueue.connections.admission_check_controller import check_active_state
from hub.multikueue.connections.cluster_list_reference import (
    ClusterListRef,
    cluster_list_reference,
)
from hub.multikueue.connections.cluster_lists import Resolution
from hub.multikueue.connections.cluster_set_members import set_members, set_problem
from tests.builders import AdmissionCheck as CheckBuilder
from tests.builders import MultiKueueCluster as ClusterBuilder
from tests.builders import MultiKueueClusterSet as SetBuilder

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
BAD = "Cannot load the AdmissionChecks parameters: "


def cluster(
    name: str, labels: dict[str, str] | None = None, active: bool = True
) -> MultiKueueCluster:
    body = ClusterBuilder(name).kubeconfig(f"kc-{name}").labels(labels or {}).obj()
    decoded = decode(MultiKueueCluster, body)
    status = ConditionStatus.TRUE if active else ConditionStatus.FALSE
    decoded.status.conditions = [
        Condition(type="Active", status=status, reason="R", last_transition_time=T0)
    ]
    return decoded


def cluster_set(builder: SetBuilder) -> MultiKueueClusterSet:
    return decode(MultiKueueClusterSet, builder.obj())


def check(body: dict[str, Any]) -> AdmissionCheck:
    return decode(AdmissionCheck, body)


FLEET = [
    cluster("gpu-b", {"pool": "gpu"}),
    cluster("cpu-a", {"pool": "cpu"}),
    cluster("gpu-a", {"pool": "gpu", "zone": "z1"}),
    cluster("gpu-c", {"pool": "gpu"}, active=False),
]


def test_a_set_decodes_from_its_manifest_and_keeps_both_ways_of_naming_clusters() -> None:
    decoded = cluster_set(SetBuilder("big").clusters("a", "b").selector({"pool": "gpu"}))
    assert decoded.spec.clusters == ["a", "b"]
    assert decoded.spec.cluster_selector is not None
    assert decoded.spec.cluster_selector.match_labels == {"pool": "gpu"}
    assert decoded.api_version == "fleetq.dev/v1alpha1"


def test_a_set_takes_a_thousand_clusters_and_refuses_more_or_a_duplicate() -> None:
    names = [f"w-{i}" for i in range(1001)]
    assert validate(cluster_set(SetBuilder("big").clusters(*names[:1000]))) == []
    too_many = validate(cluster_set(SetBuilder("big").clusters(*names)))
    assert [error.path for error in too_many] == ["spec.clusters"]
    assert "1000" in too_many[0].message
    twice = validate(cluster_set(SetBuilder("twice").clusters("a", "b", "a")))
    assert [error.path for error in twice] == ["spec.clusters[2]"]


def test_a_set_that_neither_lists_nor_selects_is_invalid() -> None:
    (error,) = validate(cluster_set(SetBuilder("nothing").spec()))
    assert (error.path, error.message) == (
        "spec",
        "at least one of clusters and clusterSelector must be set",
    )
    assert validate(cluster_set(SetBuilder("all").selector({}))) == []


def test_a_selector_the_apiserver_lets_through_is_still_reported_as_invalid() -> None:
    bad = cluster_set(SetBuilder("bad").selector(None, {"key": "pool", "operator": "Matches"}))
    problem = set_problem(bad)
    assert problem is not None
    assert "spec.clusterSelector.matchExpressions[0].operator" in problem
    assert "'Matches' is not one of In, NotIn, Exists, DoesNotExist" in problem
    no_values = SetBuilder("bad").selector(None, {"key": "pool", "operator": "In"})
    assert "operator In needs values" in str(set_problem(cluster_set(no_values)))
    assert set_problem(cluster_set(SetBuilder("ok").selector({"pool": "gpu"}))) is None


def test_members_are_the_listed_names_in_order_then_the_selected_ones_by_name() -> None:
    listed_and_selected = SetBuilder("s").clusters("gpu-c", "missing").selector({"pool": "gpu"})
    assert set_members(cluster_set(listed_and_selected), FLEET) == (
        "gpu-c",
        "missing",
        "gpu-a",
        "gpu-b",
    )
    expression = {"key": "zone", "operator": "DoesNotExist"}
    assert set_members(cluster_set(SetBuilder("s").selector(None, expression)), FLEET) == (
        "cpu-a",
        "gpu-b",
        "gpu-c",
    )
    assert set_members(cluster_set(SetBuilder("s").selector({})), FLEET) == (
        "cpu-a",
        "gpu-a",
        "gpu-b",
        "gpu-c",
    )
    assert set_members(cluster_set(SetBuilder("s").clusters("x")), FLEET) == ("x",)


def test_only_fleetq_sets_and_upstream_configs_are_cluster_lists() -> None:
    by_set = check(CheckBuilder("mk").multikueue_set("big").obj())
    assert cluster_list_reference(by_set) == ClusterListRef("MultiKueueClusterSet", "big")
    by_config = check(CheckBuilder("mk").multikueue("cfg").obj())
    assert cluster_list_reference(by_config) == ClusterListRef("MultiKueueConfig", "cfg")
    crossed = CheckBuilder("mk").multikueue("x").parameters("fleetq.dev", "MultiKueueConfig", "x")
    assert cluster_list_reference(check(crossed.obj())) is None


def state_for(
    body: dict[str, Any], lists: dict[ClusterListRef, Resolution]
) -> tuple[str, str, str]:
    by_name = {c.metadata.name: c for c in FLEET}
    state = check_active_state(check(body), lists.get, by_name.get)
    return (state.status.value, state.reason, state.message)


SET_REF = ClusterListRef("MultiKueueClusterSet", "big")
SET_CHECK = CheckBuilder("mk").multikueue_set("big").obj()


@pytest.mark.parametrize(
    ("resolution", "expected"),
    [
        pytest.param(
            Resolution(("gpu-a", "gpu-b")),
            ("True", "Active", "The admission check is active"),
            id="every member active",
        ),
        pytest.param(
            Resolution(("gpu-a", "gpu-c", "gone")),
            ("True", "SomeActiveClusters", "Missing clusters: [gone], Inactive clusters: [gpu-c]"),
            id="some members missing or inactive, as a config says it",
        ),
        pytest.param(
            Resolution(("gpu-c",)),
            ("False", "NoUsableClusters", "Inactive clusters: [gpu-c]"),
            id="no member active",
        ),
        pytest.param(
            Resolution(()),
            (
                "False",
                "NoUsableClusters",
                'MultiKueueClusterSet "big" has no clusters: it lists none and its '
                "clusterSelector matches no MultiKueueCluster",
            ),
            id="an empty set",
        ),
        pytest.param(
            Resolution(problem="spec.clusterSelector: Invalid value: x"),
            (
                "False",
                "BadConfig",
                BAD
                + 'MultiKueueClusterSet.fleetq.dev "big": spec.clusterSelector: Invalid value: x',
            ),
            id="an unusable set",
        ),
    ],
)
def test_a_check_naming_a_set_is_as_active_as_its_members(
    resolution: Resolution, expected: tuple[str, str, str]
) -> None:
    assert state_for(SET_CHECK, {SET_REF: resolution}) == expected


def test_a_check_naming_a_missing_set_or_a_wrong_kind_is_a_bad_config() -> None:
    assert state_for(SET_CHECK, {}) == (
        "False",
        "BadConfig",
        BAD + 'MultiKueueClusterSet.fleetq.dev "big" not found',
    )
    wrong_kind = CheckBuilder("mk").multikueue_set("big").parameters("fleetq.dev", "Cluster", "big")
    assert state_for(wrong_kind.obj(), {SET_REF: Resolution(("gpu-a",))}) == (
        "False",
        "BadConfig",
        BAD + 'wrong kind "Cluster", expecting "MultiKueueClusterSet": bad parameters reference',
    )


def test_twenty_five_active_members_make_the_check_active() -> None:
    fleet = {f"w-{i}": cluster(f"w-{i}") for i in range(25)}
    lists = {SET_REF: Resolution(tuple(fleet))}
    state = check_active_state(check(SET_CHECK), lists.get, fleet.get)
    assert (state.status.value, state.reason) == ("True", "Active")
    del fleet["w-24"]
    state = check_active_state(check(SET_CHECK), lists.get, fleet.get)
    assert (state.reason, state.message) == ("SomeActiveClusters", "Missing clusters: [w-24]")


def test_the_schema_needs_clusters_or_a_selector_and_bounds_the_list_at_a_thousand() -> None:
    spec = root_schema(MultiKueueClusterSet)["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [
        {
            "rule": "has(self.clusters) || has(self.clusterSelector)",
            "message": "at least one of clusters and clusterSelector must be set",
        }
    ]
    assert spec["properties"]["clusters"]["maxItems"] == 1000
    assert "spec" in root_schema(MultiKueueClusterSet)["required"]
