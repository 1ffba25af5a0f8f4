"""The hub reads upstream's Configuration file: defaults, supported fields, loud warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.manager.configuration import ConfigurationError, load_configuration, parse_configuration


def test_no_file_gives_upstream_defaults_and_our_dispatcher() -> None:
    loaded = load_configuration(None)
    config = loaded.configuration
    assert loaded.warnings == ()
    assert config.namespace == "kueue-system"
    assert config.frameworks == ("batch/job",)
    assert (config.client_qps, config.client_burst) == (300.0, 500)  # upstream v0.19's
    pods_ready = config.wait_for_pods_ready  # on by default since upstream v0.19
    assert pods_ready is not None
    assert (pods_ready.timeout_seconds, pods_ready.recovery_timeout_seconds) == (1800, 1800)
    assert not pods_ready.block_admission
    assert not config.fair_sharing_enabled
    assert config.multikueue.dispatcher_name == "fleetq.dev/capacity-aware"
    assert config.multikueue.worker_lost_timeout_seconds == 900
    assert (config.multikueue.worker_client_qps, config.multikueue.worker_client_burst) == (50, 100)
    assert (config.webhook_port, config.metrics_bind_address) == (9443, ":8443")
    assert config.leader_election.resource_name == "c1f6bfd2.kueue.x-k8s.io"


def test_a_typical_upstream_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: fleetq-system
manageJobsWithoutQueueName: true
waitForPodsReady:
  timeout: 10m
  blockAdmission: true
  requeuingStrategy:
    backoffLimitCount: 5
    backoffBaseSeconds: 30
fairSharing:
  preemptionStrategies: [LessThanInitialShare]
multiKueue:
  gcInterval: 30s
  workerLostTimeout: 1h30m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  workerClientConnection: {qps: 200, burst: 400}
clientConnection: {qps: 300, burst: 500}
leaderElection: {leaderElect: false}
"""
    )
    loaded = load_configuration(path)
    config = loaded.configuration
    assert loaded.warnings == ()
    assert config.namespace == "fleetq-system"
    assert config.manage_jobs_without_queue_name
    pods_ready = config.wait_for_pods_ready
    assert pods_ready is not None
    assert pods_ready.timeout_seconds == 600
    assert pods_ready.recovery_timeout_seconds == 600  # defaults to the timeout
    assert pods_ready.block_admission
    assert pods_ready.requeuing.backoff_limit_count == 5
    assert pods_ready.requeuing.backoff_base_seconds == 30
    assert pods_ready.requeuing.backoff_max_seconds == 3600
    assert config.fair_sharing_strategies == ("LessThanInitialShare",)
    assert config.multikueue.gc_interval_seconds == 30
    assert config.multikueue.worker_lost_timeout_seconds == 5400
    worker_budget = (config.multikueue.worker_client_qps, config.multikueue.worker_client_burst)
    assert worker_budget == (200, 400)
    assert config.client_qps == 300.0 and config.client_burst == 500
    assert not config.leader_election.leader_elect


def test_unknown_and_unsupported_fields_are_reported_not_dropped() -> None:
    loaded = parse_configuration(
        {
            "featureGates": {"TopologyAwareScheduling": True},
            "multiKueue": {"clusterProfile": {"credentialsProviders": []}, "origin": "hub-a"},
            "integrations": {"frameworks": ["batch/job", "sparkoperator.k8s.io/sparkapplication"]},
            "madeUpField": 1,
        }
    )
    text = "\n".join(loaded.warnings)
    assert "featureGates.TopologyAwareScheduling: not supported by fleetq; ignored" in text
    assert "multiKueue.clusterProfile: not supported" in text
    assert "madeUpField: not supported" in text
    assert "sparkoperator.k8s.io/sparkapplication not supported by fleetq yet" in text
    assert loaded.configuration.multikueue.origin == "hub-a"


def test_fair_sharing_block_without_strategies_enables_both_in_order() -> None:
    config = parse_configuration({"fairSharing": {}}).configuration
    assert config.fair_sharing_strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "Deployment"}, "expected apiVersion"),
        ({"waitForPodsReady": {"timeout": "ten minutes"}}, "waitForPodsReady.timeout"),
        ({"clientConnection": {"qps": "fast"}}, "clientConnection.qps: expected float"),
        ({"webhook": {"port": True}}, "webhook.port: expected int"),
        ({"integrations": {"frameworks": ["batch/jobz"]}}, "unknown framework"),
        ({"fairSharing": {"preemptionStrategies": ["Greedy"]}}, "preemptionStrategies"),
        ({"multiKueue": {"dispatcherName": ""}}, "dispatcherName"),
        (
            {"multiKueue": {"workerClientConnection": {"qps": 0}}},
            "workerClientConnection.qps: must be a positive number, got 0",
        ),
        ({"multiKueue": {"workerClientConnection": {"burst": "many"}}}, "burst: must be a"),
        (
            {"waitForPodsReady": {"requeuingStrategy": {"backoffBaseSeconds": -1}}},
            "backoffBaseSeconds: must not be negative",
        ),
        (
            {"waitForPodsReady": {"requeuingStrategy": {"backoffLimitCount": -2}}},
            "backoffLimitCount: must not be negative",
        ),
        ({"featureGates": {"DisableWaitForPodsReady": "yes"}}, "expected true or false"),
        ({"featureGates": ["DisableWaitForPodsReady"]}, "featureGates: expected a map"),
        (
            {
                "multiKueue": {
                    "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
                    "incrementalDispatcherConfig": {"stepSize": 2},
                }
            },
            "incrementalDispatcherConfig: only valid when dispatcherName is",
        ),
        (["not", "a", "mapping"], "must be a mapping"),
    ],
)
def test_malformed_values_name_the_field(data: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_configuration(data)


def test_unreadable_or_invalid_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_configuration(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed")
    with pytest.raises(ConfigurationError, match="not valid YAML"):
        load_configuration(bad)
