"""The hub chart's dashboard, Grafana dashboards and alerts: rendered, wired, and built only
on metrics the hub serves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cli.main import build_parser
from core.manager.metrics import ManagerMetrics
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics
from tests.unit.hub.test_metrics_upstream_names import served_metrics

DASHBOARDS = Path(__file__).resolve().parents[3] / "charts" / "fleetq-hub" / "dashboards"
_METRIC = re.compile(r"\b((?:kueue|multikueue|fleetq)_[a-z_]+)")
_HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


def _served() -> set[str]:
    metrics = ManagerMetrics()
    DispatchMetrics(metrics.registry)
    return set(served_metrics(metrics.registry)) | set(served_metrics(metrics.side_registry))


def _used(expression: str) -> set[str]:
    out = set()
    for name in _METRIC.findall(expression):
        for part in _HISTOGRAM_PARTS:
            if name.endswith(part):
                name = name.removesuffix(part)
        out.add(name)
    return out


def _dashboard_expressions() -> list[str]:
    expressions = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            expressions += [target["expr"] for target in panel["targets"]]
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":
                expressions.append(variable["query"])
    return expressions


def test_the_dashboard_service_reaches_the_dashboard_port(render_hub: Any) -> None:
    rendered = render_hub({"dashboard": {"enabled": True}})
    service = rendered.one("Service", "fq-fleetq-hub-dashboard")
    assert service["spec"]["ports"][0]["targetPort"] == "dashboard"
    ports = {p["name"]: p["containerPort"] for p in rendered.container()["ports"]}
    args = build_parser().parse_args(rendered.container()["args"])
    assert args.dashboard_port == ports["dashboard"]
    binding = rendered.one("ClusterRoleBinding", "fq-fleetq-hub-auth-delegator")
    assert binding["roleRef"]["name"] == "system:auth-delegator"
    plain = render_hub({})
    assert build_parser().parse_args(plain.container()["args"]).dashboard_port is None

    def detail_rules(rendered: Any) -> list[tuple[str, str]]:
        role = rendered.one("ClusterRole", "fq-fleetq-hub")
        return [
            (resource, verb)
            for rule in role["rules"]
            if rule["apiGroups"] == [""]
            for resource in rule["resources"]
            for verb in rule["verbs"]
            if resource in ("events", "pods/log")
        ]

    assert detail_rules(rendered) == [("events", "list"), ("pods/log", "get")]
    assert detail_rules(plain) == []
    assert "fq-fleetq-hub-dashboard" not in {
        s["metadata"]["name"] for s in plain.of_kind("Service")
    }


def test_a_dashboard_tls_secret_is_mounted_and_served_from(render_hub: Any) -> None:
    rendered = render_hub({"dashboard": {"enabled": True, "tls": {"secretName": "dash-cert"}}})
    container = rendered.container()
    cert_dir = build_parser().parse_args(container["args"]).dashboard_cert_dir
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert Path(mounts["dashboard-tls"]["mountPath"]) == cert_dir
    assert mounts["dashboard-tls"]["readOnly"] is True
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "dashboard-tls"]
    assert volume["secret"]["secretName"] == "dash-cert"
    # what ServingCertificate.from_dir reads: tls.crt and tls.key in that directory
    assert {i["path"] for i in volume["secret"]["items"]} == {"tls.crt", "tls.key"}
    for values in (
        {"dashboard": {"enabled": True}},
        {"dashboard": {"enabled": False, "tls": {"secretName": "dash-cert"}}},
    ):
        plain = render_hub(values)
        assert build_parser().parse_args(plain.container()["args"]).dashboard_cert_dir is None
        volumes = plain.one("Deployment")["spec"]["template"]["spec"]["volumes"]
        assert "dashboard-tls" not in {v["name"] for v in volumes}


def test_grafana_dashboards_are_configmaps_for_the_sidecar(render_hub: Any) -> None:
    rendered = render_hub({"grafana": {"dashboards": {"enabled": True, "namespace": "monitoring"}}})
    boards = [
        c for c in rendered.of_kind("ConfigMap") if "grafana_dashboard" in c["metadata"]["labels"]
    ]
    assert len(boards) == len(list(DASHBOARDS.glob("*.json"))) == 3
    for board in boards:
        assert board["metadata"]["namespace"] == "monitoring"
        [(key, text)] = board["data"].items()
        assert key.endswith(".json") and json.loads(text)["panels"]
    assert not [
        c
        for c in render_hub({}).of_kind("ConfigMap")
        if "grafana_dashboard" in c["metadata"]["labels"]
    ]


def test_every_metric_the_dashboards_use_is_served() -> None:
    expressions = _dashboard_expressions()
    used = set().union(*(_used(e) for e in expressions))
    assert len(used) > 15
    assert sorted(used - _served()) == []


def test_the_alerts_use_only_served_metrics(render_hub: Any) -> None:
    rule = render_hub(
        {"grafana": {"prometheusRule": {"enabled": True, "labels": {"release": "prom"}}}}
    ).one("PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prom"
    rules = rule["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {
        "FleetqWorkerDisconnected",
        "FleetqClusterQueueStuck",
        "FleetqDispatchLatencyHigh",
    }
    used = set().union(*(_used(r["expr"]) for r in rules))
    assert used and sorted(used - _served()) == []
