"""The hub chart's Configuration ConfigMap: what `fleetq hub` reads, and that it agrees with
the objects around it (ports, Services, Secrets, namespace) for any values."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from cli.main import build_parser
from core.manager.configuration import Configuration, parse_configuration
from core.manager.webhooks.configurations import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
)

NAMESPACE = "fleetq-system"


def _configuration(rendered: Any) -> tuple[Configuration, tuple[str, ...]]:
    config_map = rendered.one("ConfigMap")
    loaded = parse_configuration(yaml.safe_load(config_map["data"]["config.yaml"]))
    return loaded.configuration, loaded.warnings


def _mounted_config_path(rendered: Any) -> str:
    container = rendered.container()
    config_map_name = rendered.one("ConfigMap")["metadata"]["name"]
    volumes = rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    volume = next(v for v in volumes if v.get("configMap", {}).get("name") == config_map_name)
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    return f"{mount['mountPath']}/config.yaml"


def test_the_default_configuration_parses_cleanly_and_names_the_charts_own_objects(
    render_hub: Any,
) -> None:
    rendered = render_hub()
    configuration, warnings = _configuration(rendered)
    assert warnings == ()
    assert configuration.namespace == NAMESPACE
    assert configuration.frameworks == ("batch/job",)
    assert configuration.internal_cert_management is True
    webhook_service = rendered.one("Service", configuration.webhook_service_name)
    assert webhook_service["metadata"]["namespace"] == NAMESPACE
    assert configuration.webhook_secret_name.startswith("fq-")
    ports = {p["name"]: p["containerPort"] for p in rendered.container()["ports"]}
    assert configuration.health_probe_bind_address == f":{ports['health']}"
    assert configuration.metrics_bind_address == f":{ports['metrics']}"
    assert configuration.webhook_port == ports["webhook"]
    target = webhook_service["spec"]["ports"][0]["targetPort"]
    assert target == "webhook"


def test_the_release_namespace_becomes_the_hubs_namespace(render_hub: Any) -> None:
    rendered = render_hub(namespace="queueing")
    configuration, _ = _configuration(rendered)
    assert configuration.namespace == "queueing"
    assert rendered.one("Role")["metadata"]["namespace"] == "queueing"


def test_user_fields_reach_the_hub_with_upstream_meaning(render_hub: Any) -> None:
    values = {
        "configuration": {
            "waitForPodsReady": {"timeout": "7m", "blockAdmission": True},
            "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
            "manageJobsWithoutQueueName": True,
            "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental"},
            "leaderElection": {"leaseDuration": "30s", "resourceNamespace": NAMESPACE},
            "metrics": {"enableClusterQueueResources": True},
        },
        "ports": {"health": 9081, "metrics": 9090},
    }
    rendered = render_hub(values)
    configuration, warnings = _configuration(rendered)
    assert warnings == ()
    assert configuration.wait_for_pods_ready is not None
    assert configuration.wait_for_pods_ready.timeout_seconds == 420.0
    assert configuration.wait_for_pods_ready.block_admission is True
    assert configuration.fair_sharing_strategies == ("LessThanInitialShare",)
    assert configuration.manage_jobs_without_queue_name is True
    assert configuration.multikueue.dispatcher_name.endswith("incremental")
    assert configuration.leader_election.lease_duration_seconds == 30.0
    assert configuration.enable_cluster_queue_resource_metrics is True
    # The chart's ports win together with the user's metrics field beside them.
    assert configuration.health_probe_bind_address == ":9081"
    assert configuration.metrics_bind_address == ":9090"
    probe = rendered.container()["readinessProbe"]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in rendered.container()["ports"]}
    assert ports[probe["port"]] == 9081


def test_fields_fleetq_does_not_support_are_passed_on_so_the_hub_reports_them(
    render_hub: Any,
) -> None:
    rendered = render_hub({"configuration": {"featureGates": {"TopologyAwareScheduling": True}}})
    _, warnings = _configuration(rendered)
    assert warnings == ("featureGates.TopologyAwareScheduling: not supported by fleetq; ignored",)


@pytest.mark.parametrize(
    ("configuration", "named"),
    [
        ({"namespace": "elsewhere"}, "configuration.namespace is set by the chart"),
        ({"health": {"healthProbeBindAddress": ":1"}}, "use ports.health"),
        ({"webhook": {"port": 1}}, "use ports.webhook"),
        ({"internalCertManagement": {"enable": False}}, "use webhook.certificates"),
        ({"metrics": {"bindAddress": ":1"}}, "use ports.metrics"),
        (
            {"leaderElection": {"resourceNamespace": "elsewhere"}},
            "resourceNamespace must be the release namespace",
        ),
    ],
)
def test_fields_the_chart_owns_cannot_be_set_behind_its_back(
    render_hub: Any, render_error: type[Exception], configuration: dict[str, Any], named: str
) -> None:
    with pytest.raises(render_error, match=named):
        render_hub({"configuration": configuration})


def test_cert_manager_mode_turns_internal_management_off(render_hub: Any) -> None:
    rendered = render_hub({"webhook": {"certificates": {"mode": "certManager"}}})
    configuration, _ = _configuration(rendered)
    assert configuration.internal_cert_management is False
    certificate = rendered.one("Certificate")
    assert certificate["spec"]["secretName"] == configuration.webhook_secret_name


def test_the_container_arguments_are_ones_fleetq_hub_accepts(render_hub: Any) -> None:
    value_sets: list[dict[str, Any]] = [
        {},
        {"webhook": {"enabled": False}, "logLevel": "debug"},
        {"visibility": {"enabled": True}, "extraArgs": ["--identity=standby"]},
    ]
    for values in value_sets:
        rendered = render_hub(values)
        args = build_parser().parse_args(rendered.container()["args"])
        assert args.command == "hub"
        assert str(args.config) == _mounted_config_path(rendered)
        assert args.no_webhooks is (values.get("webhook", {}).get("enabled") is False)
        assert args.log_level == values.get("logLevel", "info")
        if values.get("visibility"):
            assert args.visibility_port == rendered.container()["ports"][-1]["containerPort"]
            assert args.identity == "standby"
        else:
            assert args.visibility_port is None


def test_a_changed_configuration_rolls_the_pods(render_hub: Any) -> None:
    def checksum(values: dict[str, Any]) -> str:
        template = render_hub(values).one("Deployment")["spec"]["template"]
        return str(template["metadata"]["annotations"]["checksum/config"])

    base = checksum({})
    assert checksum({"configuration": {"manageJobsWithoutQueueName": True}}) != base
    assert checksum({"replicas": 3}) == base


def test_the_hub_keeps_the_ca_bundle_of_the_configurations_the_chart_creates(
    render_hub: Any,
) -> None:
    names = {
        obj["metadata"]["name"]
        for obj in render_hub()
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    }
    assert names == {MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME}
