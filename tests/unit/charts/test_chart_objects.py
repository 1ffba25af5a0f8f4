"""Which objects each chart renders for a values set, and that they point at each other
(Services at pods, ServiceMonitor at the metrics Service, APIService at the visibility
Service); `helm lint --strict` is clean for every values set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHARTS = Path(__file__).resolve().parents[3] / "charts"

HUB_KINDS = {
    "ServiceAccount",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Deployment",
    "PodDisruptionBudget",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}
WORKER_KINDS = {
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Deployment",
}
LINT_VALUES = [
    [],
    ["--set", "webhook.enabled=false", "--set", "replicas=1"],
    [
        "--set",
        "webhook.certificates.mode=certManager",
        "--set",
        "metrics.serviceMonitor.enabled=true",
    ],
    ["--set", "visibility.enabled=true", "--set", "visibility.apiService.enabled=true"],
]


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_hub_chart_renders_its_objects_by_default(render_hub: Any) -> None:
    rendered = render_hub()
    assert rendered.kinds() == HUB_KINDS
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered}
    assert len(names) == len(rendered)
    services = {s["metadata"]["name"] for s in rendered.of_kind("Service")}
    assert services == {"fq-fleetq-hub-webhook-service", "fq-fleetq-hub-metrics"}


def test_the_worker_chart_renders_its_objects_by_default(render_worker: Any) -> None:
    rendered = render_worker()
    assert rendered.kinds() == WORKER_KINDS
    assert {s["metadata"]["name"] for s in rendered.of_kind("Service")} == {
        "fq-fleetq-worker-metrics"
    }


@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_every_service_selects_the_pods_on_a_named_container_port(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    values = {"visibility": {"enabled": True}} if chart == "hub" else {}
    rendered = render_hub(values) if chart == "hub" else render_worker(values)
    template = rendered.one("Deployment")["spec"]["template"]
    port_names = {p["name"] for p in rendered.container()["ports"]}
    for service in rendered.of_kind("Service"):
        assert _selects(service["spec"]["selector"], template["metadata"]["labels"])
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (service["metadata"]["name"], port)
    for obj in rendered:
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            continue
        if obj["metadata"]["name"].startswith("kueue-"):
            continue  # the user roles keep upstream's names: users' bindings name them
        assert obj["metadata"]["name"].startswith("fq-"), "cluster-scoped names are per release"


@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_the_service_monitor_scrapes_the_metrics_service(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    rendered = render_hub(values) if chart == "hub" else render_worker(values)
    monitor = rendered.one("ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    matched = [
        s
        for s in rendered.of_kind("Service")
        if _selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    assert [s["metadata"]["name"] for s in matched] == [f"fq-fleetq-{chart}-metrics"]
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] in {p["name"] for p in matched[0]["spec"]["ports"]}
    assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "http")
    assert not (render_hub() if chart == "hub" else render_worker()).of_kind("ServiceMonitor")


def test_the_visibility_api_services_point_at_the_visibility_service(render_hub: Any) -> None:
    rendered = render_hub({"visibility": {"enabled": True, "apiService": {"enabled": True}}})
    api_services = rendered.of_kind("APIService")
    assert [a["metadata"]["name"] for a in api_services] == [
        "v1beta1.visibility.kueue.x-k8s.io",
        "v1beta2.visibility.kueue.x-k8s.io",
    ]
    for api_service, version in zip(api_services, ("v1beta1", "v1beta2"), strict=True):
        assert (api_service["spec"]["group"], api_service["spec"]["version"]) == (
            "visibility.kueue.x-k8s.io",
            version,
        )
        service = rendered.one("Service", api_service["spec"]["service"]["name"])
        assert api_service["spec"]["service"]["namespace"] == service["metadata"]["namespace"]
        assert api_service["spec"]["service"]["port"] == service["spec"]["ports"][0]["port"]
        assert api_service["spec"]["insecureSkipTLSVerify"] is True
    with_ca = render_hub(
        {"visibility": {"enabled": True, "apiService": {"enabled": True, "caBundle": "PEM"}}}
    ).one("APIService", "v1beta2.visibility.kueue.x-k8s.io")
    assert with_ca["spec"]["caBundle"] == "UEVN"
    assert "insecureSkipTLSVerify" not in with_ca["spec"]


def test_an_api_service_without_the_visibility_server_is_refused(
    render_hub: Any, render_error: type[Exception]
) -> None:
    with pytest.raises(render_error, match=r"needs visibility\.enabled"):
        render_hub({"visibility": {"apiService": {"enabled": True}}})


def test_a_release_named_after_the_chart_is_not_doubled(render_hub: Any) -> None:
    rendered = render_hub(release="fleetq-hub")
    assert rendered.one("Deployment")["metadata"]["name"] == "fleetq-hub"


@pytest.mark.parametrize("values", LINT_VALUES, ids=["default", "single", "cm", "vis"])
@pytest.mark.parametrize("chart", ["fleetq-hub", "fleetq-worker"])
def test_helm_lint_is_clean(helm: Any, chart: str, values: list[str]) -> None:
    chart_dir = CHARTS / chart
    result = helm.run("lint", "--strict", str(chart_dir), *values)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout
