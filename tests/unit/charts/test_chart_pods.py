"""The hub and agent pods: non-root, read-only root filesystem with emptyDir scratch space,
probes on the health port, resources, and the image the Dockerfile builds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

CHARTS = ["hub", "worker"]


def _render(chart: str, render_hub: Any, render_worker: Any, values: Any = None) -> Any:
    return render_hub(values) if chart == "hub" else render_worker(values)


@pytest.mark.parametrize("chart", CHARTS)
def test_the_pod_runs_non_root_without_privileges_on_a_read_only_root(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    rendered = _render(chart, render_hub, render_worker)
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = rendered.container()
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security
    assert not pod.get("hostNetwork") and not pod.get("hostPID")


@pytest.mark.parametrize("chart", CHARTS)
def test_every_writable_mount_is_an_emptydir(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    rendered = _render(chart, render_hub, render_worker)
    volumes = {
        v["name"]: v for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    }
    mounts = rendered.container()["volumeMounts"]
    writable = [m for m in mounts if not m.get("readOnly")]
    assert "/tmp" in {m["mountPath"] for m in writable}
    for mount in writable:
        assert "emptyDir" in volumes[mount["name"]], mount


def test_the_hubs_cert_dir_is_an_emptydir_where_the_hub_writes_it(render_hub: Any) -> None:
    rendered = render_hub()
    config = yaml.safe_load(rendered.one("ConfigMap")["data"]["config.yaml"])
    mount = next(m for m in rendered.container()["volumeMounts"] if m["name"] == "webhook-certs")
    assert mount["mountPath"] == config["webhook"]["certDir"]
    volumes = rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    assert "emptyDir" in next(v for v in volumes if v["name"] == "webhook-certs")


@pytest.mark.parametrize("chart", CHARTS)
def test_probes_ask_the_health_port_for_healthz_and_readyz(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    rendered = _render(chart, render_hub, render_worker, {"ports": {"health": 9999}})
    container = rendered.container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["health"] == 9999
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


@pytest.mark.parametrize("chart", CHARTS)
def test_resources_are_requested_and_limited(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    resources = _render(chart, render_hub, render_worker).container()["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}


@pytest.mark.parametrize("chart", CHARTS)
def test_the_image_defaults_to_the_app_version_and_can_be_pinned_by_digest(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    default = _render(chart, render_hub, render_worker).container()
    assert default["image"] == "fleetq:0.1.0"
    digest = "sha256:" + "a" * 64
    pinned = _render(
        chart,
        render_hub,
        render_worker,
        {"image": {"repository": "registry.example/fleetq", "digest": digest}},
    ).container()
    assert pinned["image"] == f"registry.example/fleetq@{digest}"


@pytest.mark.parametrize("chart", CHARTS)
def test_a_disruption_budget_protects_replicated_installs_only(
    chart: str, render_hub: Any, render_worker: Any
) -> None:
    single = _render(chart, render_hub, render_worker, {"replicas": 1})
    assert not single.of_kind("PodDisruptionBudget")
    replicated = _render(chart, render_hub, render_worker, {"replicas": 3})
    budget = replicated.one("PodDisruptionBudget")
    selector = replicated.one("Deployment")["spec"]["selector"]["matchLabels"]
    assert budget["spec"]["selector"]["matchLabels"] == selector
    assert budget["spec"]["minAvailable"] == 1


def test_hub_replicas_spread_over_nodes_unless_told_otherwise(render_hub: Any) -> None:
    pod = render_hub().one("Deployment")["spec"]["template"]["spec"]
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    custom: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}
    }
    assert (
        render_hub({"affinity": custom}).one("Deployment")["spec"]["template"]["spec"]["affinity"]
        == custom
    )


def test_the_agent_runs_in_cluster_as_fleetq_agent(render_worker: Any) -> None:
    container = render_worker({"extraArgs": ["--verbose-capacity"]}).container()
    assert container["args"][0] == "agent"
    assert not any(arg.startswith("--kubeconfig") for arg in container["args"])
    assert container["args"][-1] == "--verbose-capacity"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
