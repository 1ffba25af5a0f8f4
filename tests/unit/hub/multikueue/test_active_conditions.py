"""Active conditions: backoff schedule, messages, and when a condition is (re)written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.api.admission_check import (
    AdmissionCheck,
    AdmissionCheckParametersReference,
    AdmissionCheckSpec,
)
from core.api.meta import Condition, ConditionStatus, ObjectMeta
from core.api.multikueue import MultiKueueCluster, MultiKueueClusterStatus
from hub.multikueue.connections.active_condition import (
    ActiveState,
    ClusterActiveReason,
    cluster_misconfigured,
    cluster_unreachable,
    with_condition,
)
from hub.multikueue.connections.admission_check_controller import check_active_state
from hub.multikueue.connections.cluster_controller import wanted_condition
from hub.multikueue.connections.cluster_list_reference import ClusterListRef
from hub.multikueue.connections.cluster_lists import Resolution
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.worker_connection import ConnectionPhase, ConnectionState

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_upstreams_backoff_doubles_from_five_seconds_up_to_seven_steps() -> None:
    backoff = ReconnectBackoff()
    assert [backoff.delay(n) for n in range(10)] == [0, 5, 10, 20, 40, 80, 160, 320, 320, 320]
    assert backoff.longest_seconds == 320


def test_a_test_base_scales_the_whole_schedule() -> None:
    assert [ReconnectBackoff(base_seconds=0.5).delay(n) for n in (1, 2, 7, 8)] == [
        0.5,
        1.0,
        32.0,
        32.0,
    ]
    with pytest.raises(ValueError):
        ReconnectBackoff(base_seconds=0)


def test_an_unreachable_worker_says_how_often_and_when_it_is_retried() -> None:
    state = cluster_unreachable("dial tcp: connection refused", 3, T0 + timedelta(seconds=20.7))
    assert state.status is ConditionStatus.FALSE
    assert state.reason == "ClientConnectionFailed"
    assert state.message == (
        "dial tcp: connection refused; connection attempts: 3, "
        "next connection attempt: 2026-03-01T12:00:20Z"
    )


def test_a_misconfigured_worker_carries_upstreams_prefix() -> None:
    state = cluster_misconfigured(
        ClusterActiveReason.INSECURE_KUBE_CONFIG, "tokenFile is not allowed"
    )
    assert (state.reason, state.message) == (
        "InsecureKubeConfig",
        "load client config failed: tokenFile is not allowed",
    )


def test_connection_states_map_to_conditions_and_running_attempts_to_none() -> None:
    connected = wanted_condition(ConnectionState(phase=ConnectionPhase.CONNECTED))
    assert connected == ActiveState(ConditionStatus.TRUE, "Active", "Connected")
    failed = ConnectionState(
        phase=ConnectionPhase.FAILED,
        failed_attempts=2,
        last_error="refused",
        next_attempt_at=T0,
    )
    assert wanted_condition(failed) == cluster_unreachable("refused", 2, T0)
    assert wanted_condition(ConnectionState(phase=ConnectionPhase.CONNECTING)) is None
    assert wanted_condition(ConnectionState()) is None


def test_a_condition_is_rewritten_only_when_status_reason_or_message_change() -> None:
    first = with_condition([], cluster_unreachable("x", 1, T0), generation=1, now=T0)
    assert first is not None
    (condition,) = first
    assert condition.last_transition_time == T0 and condition.observed_generation == 1
    assert with_condition(first, cluster_unreachable("x", 1, T0), generation=2, now=T0) is None

    later = T0 + timedelta(seconds=30)
    retried = with_condition(first, cluster_unreachable("x", 2, later), generation=1, now=later)
    assert retried is not None
    assert retried[0].last_transition_time == T0  # still False: no transition
    connected = with_condition(
        retried, ActiveState(ConditionStatus.TRUE, "Active", "Connected"), generation=1, now=later
    )
    assert connected is not None
    assert connected[0].last_transition_time == later


def test_other_condition_types_are_kept() -> None:
    other = Condition(
        type="Other", status=ConditionStatus.TRUE, reason="R", last_transition_time=T0
    )
    result = with_condition(
        [other], ActiveState(ConditionStatus.TRUE, "Active", "Connected"), generation=0, now=T0
    )
    assert result is not None
    assert [c.type for c in result] == ["Other", "Active"]
    assert result[1].observed_generation is None


def mk_cluster(name: str, active: bool | None) -> MultiKueueCluster:
    conditions = []
    if active is not None:
        status = ConditionStatus.TRUE if active else ConditionStatus.FALSE
        conditions = [Condition(type="Active", status=status, reason="R", last_transition_time=T0)]
    return MultiKueueCluster(
        metadata=ObjectMeta(name=name), status=MultiKueueClusterStatus(conditions=conditions)
    )


def mk_check(
    config: str = "cfg", kind: str = "MultiKueueConfig", group: str = "kueue.x-k8s.io"
) -> AdmissionCheck:
    return AdmissionCheck(
        metadata=ObjectMeta(name="mk"),
        spec=AdmissionCheckSpec(
            controller_name="kueue.x-k8s.io/multikueue",
            parameters=AdmissionCheckParametersReference(api_group=group, kind=kind, name=config),
        ),
    )


CLUSTERS = {
    "up-1": mk_cluster("up-1", True),
    "up-2": mk_cluster("up-2", True),
    "down": mk_cluster("down", False),
    "new": mk_cluster("new", None),
}


def state_for(check: AdmissionCheck, clusters: list[str] | None) -> tuple[str, str, str]:
    configs = {}
    if clusters is not None:
        configs[ClusterListRef("MultiKueueConfig", "cfg")] = Resolution(tuple(clusters))
    state = check_active_state(check, configs.get, CLUSTERS.get)
    return (state.status.value, state.reason, state.message)


@pytest.mark.parametrize(
    ("clusters", "expected"),
    [
        (["up-1", "up-2"], ("True", "Active", "The admission check is active")),
        (["up-1", "down"], ("True", "SomeActiveClusters", "Inactive clusters: [down]")),
        (
            ["gone", "up-1", "new"],
            ("True", "SomeActiveClusters", "Missing clusters: [gone], Inactive clusters: [new]"),
        ),
        (["down", "new"], ("False", "NoUsableClusters", "Inactive clusters: [down new]")),
        (["gone"], ("False", "NoUsableClusters", "Missing clusters: [gone]")),
    ],
)
def test_a_check_is_as_active_as_its_clusters(
    clusters: list[str], expected: tuple[str, str, str]
) -> None:
    assert state_for(mk_check(), clusters) == expected


def test_a_check_without_a_usable_config_reference_is_a_bad_config() -> None:
    prefix = "Cannot load the AdmissionChecks parameters: "
    assert state_for(mk_check(), None) == (
        "False",
        "BadConfig",
        prefix + 'MultiKueueConfig.kueue.x-k8s.io "cfg" not found',
    )
    assert state_for(mk_check(kind="ProvisioningRequestConfig"), ["up-1"])[2] == (
        prefix + 'wrong kind "ProvisioningRequestConfig", expecting "MultiKueueConfig": '
        "bad parameters reference"
    )
    assert state_for(mk_check(group="example.com"), ["up-1"])[2] == (
        prefix + 'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference'
    )
    bare = AdmissionCheck(spec=AdmissionCheckSpec(controller_name="kueue.x-k8s.io/multikueue"))
    assert state_for(bare, ["up-1"])[2] == prefix + "missing parameters reference"
