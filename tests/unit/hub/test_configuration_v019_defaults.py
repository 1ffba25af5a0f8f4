"""Upstream v0.19's Configuration defaults and feature gates, as fleetq applies them."""

from __future__ import annotations

from typing import Any

import pytest

from core.manager.configuration import parse_configuration
from core.manager.engine_settings import engine_config_for
from core.manager.webhooks.job_context import JobAdmissionSettings


def test_wait_for_pods_ready_is_on_unless_the_disable_gate_is_set() -> None:
    assert parse_configuration({}).configuration.wait_for_pods_ready is not None
    loaded = parse_configuration({"featureGates": {"DisableWaitForPodsReady": True}})
    assert loaded.configuration.wait_for_pods_ready is None
    assert loaded.warnings == ()
    assert loaded.configuration.feature_gates.disable_wait_for_pods_ready


def test_the_disable_gate_wins_over_an_explicit_block() -> None:
    data = {
        "featureGates": {"DisableWaitForPodsReady": True},
        "waitForPodsReady": {"timeout": "5m"},
    }
    assert parse_configuration(data).configuration.wait_for_pods_ready is None


def test_a_null_block_stays_on_and_says_why() -> None:
    loaded = parse_configuration({"waitForPodsReady": None})
    pods_ready = loaded.configuration.wait_for_pods_ready
    assert pods_ready is not None and pods_ready.timeout_seconds == 1800
    assert any("DisableWaitForPodsReady" in warning for warning in loaded.warnings)


def test_a_zero_timeout_means_thirty_minutes_and_recovery_follows_it() -> None:
    pods_ready = parse_configuration(
        {"waitForPodsReady": {"timeout": "0s", "blockAdmission": True}}
    ).configuration.wait_for_pods_ready
    assert pods_ready is not None
    assert (pods_ready.timeout_seconds, pods_ready.recovery_timeout_seconds) == (1800, 1800)
    assert pods_ready.block_admission


def test_a_zero_recovery_timeout_turns_recovery_checking_off() -> None:
    pods_ready = parse_configuration(
        {"waitForPodsReady": {"timeout": "2m", "recoveryTimeout": "0s"}}
    ).configuration.wait_for_pods_ready
    assert pods_ready is not None
    assert (pods_ready.timeout_seconds, pods_ready.recovery_timeout_seconds) == (120, 0)


def _multikueue(**fields: Any) -> dict[str, Any]:
    return {
        "multiKueue": {
            "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
            **fields,
        }
    }


def test_the_step_size_is_read_while_its_gate_is_on() -> None:
    loaded = parse_configuration(_multikueue(incrementalDispatcherConfig={"stepSize": 1}))
    assert loaded.configuration.multikueue.incremental_step_size == 1
    assert loaded.warnings == ()


def test_with_its_gate_off_the_step_size_is_three_and_the_setting_is_reported() -> None:
    data = _multikueue(incrementalDispatcherConfig={"stepSize": 1})
    data["featureGates"] = {"MultiKueueIncrementalDispatcherConfig": False}
    loaded = parse_configuration(data)
    assert loaded.configuration.multikueue.incremental_step_size == 3
    assert any("stepSize: ignored" in warning for warning in loaded.warnings)


def test_the_capacity_aware_dispatcher_may_carry_the_incremental_config() -> None:
    loaded = parse_configuration({"multiKueue": {"incrementalDispatcherConfig": {"stepSize": 2}}})
    assert loaded.configuration.multikueue.incremental_step_size == 2


@pytest.mark.parametrize(
    "gate",
    ["MultiKueueIncrementalDispatcherRespectConfigOrder", "MultiKueueKubeConfigPathValidation"],
)
def test_a_fixed_gate_is_quiet_at_fleetqs_value_and_reported_at_the_other(gate: str) -> None:
    assert parse_configuration({"featureGates": {gate: True}}).warnings == ()
    warnings = parse_configuration({"featureGates": {gate: False}}).warnings
    assert len(warnings) == 1
    assert f"fleetq always behaves as {gate}=true" in warnings[0]


def test_an_unknown_gate_is_reported_not_dropped() -> None:
    loaded = parse_configuration({"featureGates": {"TopologyAwareScheduling": True}})
    assert loaded.warnings == (
        "featureGates.TopologyAwareScheduling: not supported by fleetq; ignored",
    )


def test_elastic_jobs_are_on_by_default_and_the_gate_turns_them_off() -> None:
    assert parse_configuration({}).configuration.feature_gates.elastic_jobs
    loaded = parse_configuration({"featureGates": {"ElasticJobsViaWorkloadSlices": False}})
    assert loaded.warnings == ()
    configuration = loaded.configuration
    assert not configuration.feature_gates.elastic_jobs
    assert not engine_config_for(configuration).workload_slices
    assert not JobAdmissionSettings.from_configuration(configuration).elastic_jobs


def test_local_queue_metrics_are_on_by_default_and_the_gate_turns_them_off() -> None:
    assert parse_configuration({}).configuration.feature_gates.local_queue_metrics
    loaded = parse_configuration({"featureGates": {"LocalQueueMetrics": False}})
    assert loaded.warnings == ()
    assert not loaded.configuration.feature_gates.local_queue_metrics
    resources = parse_configuration({"metrics": {"enableClusterQueueResources": True}})
    assert resources.configuration.enable_cluster_queue_resource_metrics


def test_concurrent_admission_is_off_by_default_and_the_gate_turns_it_on() -> None:
    default = parse_configuration({}).configuration
    assert not default.feature_gates.concurrent_admission
    assert not engine_config_for(default).concurrent_admission
    loaded = parse_configuration({"featureGates": {"ConcurrentAdmission": True}})
    assert loaded.warnings == ()
    assert engine_config_for(loaded.configuration).concurrent_admission
