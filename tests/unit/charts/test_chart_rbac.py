"""The charts' RBAC: enough for every read and write the hub (and agent) make, nothing more.

Rules are evaluated the way the apiserver's RBAC authorizer does (group, resource or
resource/subresource, verb, optional resourceNames); no wildcard is ever granted, and
Secrets are readable only through a Role in the release namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.kube.client import KubeClient
from core.kube.cluster_config import ClusterConfig, Credentials
from core.kube.informer import Informer
from core.manager.configuration import parse_configuration
from core.manager.webhooks.configurations import (
    MUTATING_CONFIGURATION_NAME,
    VALIDATING_CONFIGURATION_NAME,
)
from hub.app import Hub
from hub.multikueue.connections.service import MultiKueueConnections

NAMESPACE = "fleetq-system"
CHARTS = Path(__file__).resolve().parents[3] / "charts"
VALUE_SETS: list[dict[str, Any]] = [
    {},
    {"webhook": {"enabled": False}},
    {"webhook": {"certificates": {"mode": "certManager"}}},
    {"visibility": {"enabled": True, "apiService": {"enabled": True}}},
]


@dataclass(frozen=True)
class Grant:
    """The rules of one Role or ClusterRole, and where they apply."""

    kind: str
    name: str
    namespace: str | None
    rules: list[dict[str, Any]]

    def allows(self, group: str, resource: str, verb: str, name: str | None = None) -> bool:
        for rule in self.rules:
            if group not in rule.get("apiGroups", ()) or resource not in rule.get("resources", ()):
                continue
            if verb not in rule.get("verbs", ()):
                continue
            names = rule.get("resourceNames")
            if names and (name is None or name not in names):
                continue
            return True
        return False


def grants(rendered: Iterable[dict[str, Any]]) -> list[Grant]:
    """Roles and ClusterRoles that some binding in the render gives to a subject."""
    objects = list(rendered)
    roles = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")): o
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    found = []
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace")
        key = (ref["kind"], ref["name"], namespace if ref["kind"] == "Role" else None)
        role = roles.get(key)
        if role is not None:
            scope = namespace if binding["kind"] == "RoleBinding" else None
            found.append(Grant(role["kind"], ref["name"], scope, role["rules"]))
    return found


class Access:
    """What the charts' ServiceAccount may do, cluster-wide or in a namespace."""

    def __init__(self, rendered: Iterable[dict[str, Any]]) -> None:
        self.grants = grants(rendered)

    def can(
        self,
        verb: str,
        group: str,
        resource: str,
        *,
        namespace: str | None = None,
        name: str | None = None,
    ) -> bool:
        """`namespace=None` asks for the whole cluster (cluster-scoped or all namespaces)."""
        return any(
            grant.allows(group, resource, verb, name)
            for grant in self.grants
            if grant.namespace is None or grant.namespace == namespace
        )


def _roles(rendered: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (o for o in rendered if o["kind"] in ("Role", "ClusterRole"))


def _crd_resources(chart: str) -> set[tuple[str, str]]:
    """(group, plural) of every CRD the chart ships, plus `plural/status` where served."""
    found = set()
    for path in (CHARTS / chart / "crds").glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        found.add((group, plural))
        if any("status" in (v.get("subresources") or {}) for v in crd["spec"]["versions"]):
            found.add((group, f"{plural}/status"))
    return found


@pytest.mark.parametrize("values", VALUE_SETS, ids=["default", "no-webhooks", "cm", "vis"])
@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_no_rule_grants_a_wildcard(
    render_hub: Any, render_worker: Any, chart: str, values: dict[str, Any]
) -> None:
    rendered = render_hub(values) if chart == "hub" else render_worker()
    for role in _roles(rendered):
        for rule in role.get("rules") or ():  # aggregated roles have none of their own
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, ()), (role["metadata"]["name"], rule)
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule


@pytest.mark.parametrize("values", VALUE_SETS, ids=["default", "no-webhooks", "cm", "vis"])
def test_secrets_are_reachable_only_in_the_release_namespace(
    render_hub: Any, values: dict[str, Any]
) -> None:
    rendered = render_hub(values)
    for grant in grants(rendered):
        if grant.allows("", "secrets", "get") or grant.allows("", "secrets", "list"):
            assert grant.kind == "Role" and grant.namespace == NAMESPACE, grant
    access = Access(rendered)
    assert access.can("list", "", "secrets", namespace=NAMESPACE)
    assert access.can("watch", "", "secrets", namespace=NAMESPACE)
    assert not access.can("get", "", "secrets", namespace="default")
    assert not access.can("list", "", "secrets")
    assert not access.can("delete", "", "secrets", namespace=NAMESPACE)


def test_only_the_hub_that_issues_certificates_may_write_its_secret(render_hub: Any) -> None:
    internal = Access(render_hub())
    assert internal.can("create", "", "secrets", namespace=NAMESPACE)
    assert internal.can("update", "", "secrets", namespace=NAMESPACE)
    for values in VALUE_SETS[1:3]:
        mounted = Access(render_hub(values))
        assert not mounted.can("create", "", "secrets", namespace=NAMESPACE)
        assert not mounted.can("update", "", "secrets", namespace=NAMESPACE)


async def test_every_resource_the_hub_watches_is_listable_and_watchable(render_hub: Any) -> None:
    rendered = render_hub()
    config_yaml = rendered.one("ConfigMap")["data"]["config.yaml"]
    configuration = parse_configuration(yaml.safe_load(config_yaml)).configuration
    access = Access(rendered)
    # The real objects `fleetq hub` builds, with a client that never connects.
    client = KubeClient(
        ClusterConfig("unreachable", "https://127.0.0.1:9", None, Credentials(None))
    )
    try:
        hub = Hub(configuration, client)
        multikueue = MultiKueueConnections(client, configuration)
        informers: list[Informer[Any]] = [*hub.informers, *multikueue.informers()]
        assert len(informers) > 10
        for informer in informers:
            watcher = informer.watcher
            resource, namespace = watcher.resource, watcher.namespace
            for verb in ("list", "watch"):
                assert access.can(verb, resource.group, resource.plural, namespace=namespace), (
                    verb,
                    resource.group,
                    resource.plural,
                    namespace,
                )
    finally:
        await client.close()


# Writes the hub makes, by component (read from hub/, core/kube and integrations/).
HUB_CLUSTER_WRITES = [
    # Job controller: Workloads for Jobs, kept matching, released and deleted.
    ("create", "kueue.x-k8s.io", "workloads"),
    ("update", "kueue.x-k8s.io", "workloads"),
    ("patch", "kueue.x-k8s.io", "workloads"),
    ("delete", "kueue.x-k8s.io", "workloads"),
    # Job controller: suspend/resume, node selectors, restored status.
    ("patch", "batch", "jobs"),
    ("patch", "batch", "jobs/status"),
    ("update", "batch", "jobs/finalizers"),
    # Status writers: admissions, queue figures, checks and worker connections.
    ("patch", "kueue.x-k8s.io", "workloads/status"),
    ("get", "kueue.x-k8s.io", "workloads"),
    ("patch", "kueue.x-k8s.io", "clusterqueues/status"),
    ("patch", "kueue.x-k8s.io", "localqueues/status"),
    ("patch", "kueue.x-k8s.io", "cohorts/status"),
    ("patch", "kueue.x-k8s.io", "admissionchecks/status"),
    ("patch", "kueue.x-k8s.io", "multikueueclusters/status"),
    # Resource-in-use finalizers.
    ("patch", "kueue.x-k8s.io", "clusterqueues"),
    ("patch", "kueue.x-k8s.io", "resourceflavors"),
    ("patch", "kueue.x-k8s.io", "admissionchecks"),
    # Event recorder (events.k8s.io, series patched).
    ("create", "events.k8s.io", "events"),
    ("patch", "events.k8s.io", "events"),
]
HUB_NAMESPACE_WRITES = [
    ("get", "coordination.k8s.io", "leases"),
    ("create", "coordination.k8s.io", "leases"),
    ("update", "coordination.k8s.io", "leases"),
    ("get", "", "secrets"),
    ("create", "", "secrets"),
    ("update", "", "secrets"),
]


def test_the_hub_may_make_every_write_it_makes(render_hub: Any) -> None:
    access = Access(render_hub())
    for verb, group, resource in HUB_CLUSTER_WRITES:
        assert access.can(verb, group, resource, namespace="team-a"), (verb, group, resource)
    for verb, group, resource in HUB_NAMESPACE_WRITES:
        assert access.can(verb, group, resource, namespace=NAMESPACE), (verb, group, resource)
        if group == "coordination.k8s.io":
            assert not access.can(verb, group, resource, namespace="team-a")
    for plural, name in (
        ("mutatingwebhookconfigurations", MUTATING_CONFIGURATION_NAME),
        ("validatingwebhookconfigurations", VALIDATING_CONFIGURATION_NAME),
    ):
        for verb in ("get", "update"):
            assert access.can(verb, "admissionregistration.k8s.io", plural, name=name)
        assert not access.can("update", "admissionregistration.k8s.io", plural, name="other")
        assert not access.can("delete", "admissionregistration.k8s.io", plural, name=name)


@pytest.mark.parametrize(
    ("verb", "group", "resource"),
    [
        ("delete", "batch", "jobs"),
        ("create", "batch", "jobs"),
        ("create", "", "pods"),
        ("patch", "", "nodes"),
        ("list", "", "configmaps"),
        ("create", "", "namespaces"),
        ("create", "kueue.x-k8s.io", "clusterqueues"),
        ("delete", "kueue.x-k8s.io", "localqueues"),
        ("update", "apiextensions.k8s.io", "customresourcedefinitions"),
        ("create", "rbac.authorization.k8s.io", "clusterrolebindings"),
        ("create", "fleetq.dev", "workercapacities"),
        ("list", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ],
)
def test_the_hub_may_not_do_what_it_never_does(
    render_hub: Any, verb: str, group: str, resource: str
) -> None:
    access = Access(render_hub())
    assert not access.can(verb, group, resource, namespace="team-a")


def test_the_visibility_api_gets_delegated_auth_only_when_registered(render_hub: Any) -> None:
    plain = {g.name for g in grants(render_hub())}
    registered = render_hub(VALUE_SETS[3])
    bindings = {
        (b["kind"], b["roleRef"]["name"], b["metadata"].get("namespace"))
        for b in registered
        if b["kind"].endswith("Binding")
    }
    assert ("ClusterRoleBinding", "system:auth-delegator", None) in bindings
    assert (
        "RoleBinding",
        "extension-apiserver-authentication-reader",
        "kube-system",
    ) in bindings
    assert "system:auth-delegator" not in plain


@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_bindings_name_the_charts_service_account_in_the_release_namespace(
    render_hub: Any, render_worker: Any, chart: str
) -> None:
    rendered = render_hub(VALUE_SETS[3]) if chart == "hub" else render_worker()
    account = rendered.one("ServiceAccount")["metadata"]
    assert account["namespace"] == NAMESPACE
    for binding in (o for o in rendered if o["kind"].endswith("Binding")):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": NAMESPACE}
        ]
    assert rendered.container()["name"] in ("hub", "agent")
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]


@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_custom_resources_in_rules_are_ones_the_chart_installs(
    render_hub: Any, render_worker: Any, chart: str
) -> None:
    crds = _crd_resources(f"fleetq-{chart}")
    rendered = render_hub() if chart == "hub" else render_worker()
    for role in _roles(rendered):
        for rule in role.get("rules") or ():
            for group in rule["apiGroups"]:
                if group not in ("kueue.x-k8s.io", "fleetq.dev"):
                    continue
                for resource in rule["resources"]:
                    assert (group, resource) in crds, (group, resource)


def test_the_agent_reports_capacity_and_admits_locally_but_reads_no_secrets(
    render_worker: Any,
) -> None:
    rendered = render_worker()
    access = Access(rendered)
    for verb in ("create", "update", "patch", "get", "list", "watch"):
        assert access.can(verb, "fleetq.dev", "workercapacities")
    assert access.can("patch", "fleetq.dev", "workercapacities/status")
    for resource in ("pods", "nodes"):
        for verb in ("get", "list", "watch"):
            assert access.can(verb, "", resource)
    assert not access.can("delete", "", "nodes")
    # A stopped plain Pod is deleted (the `pod` kind), as upstream's Kueue does.
    assert access.can("delete", "", "pods")
    for verb in ("create", "patch", "delete"):
        assert access.can(verb, "kueue.x-k8s.io", "workloads", namespace="team-a")
    assert access.can("patch", "kueue.x-k8s.io", "workloads/status", namespace="team-a")
    assert access.can("patch", "batch", "jobs", namespace="team-a")
    assert access.can("create", "coordination.k8s.io", "leases", namespace=NAMESPACE)
    assert not access.can("create", "coordination.k8s.io", "leases", namespace="team-a")
    for namespace in (None, NAMESPACE):
        for verb in ("get", "list", "watch"):
            assert not access.can(verb, "", "secrets", namespace=namespace)
    assert not access.can("delete", "batch", "jobs", namespace="team-a")
    assert not access.can("list", "kueue.x-k8s.io", "multikueueclusters")
    assert not {o["kind"] for o in rendered} & {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "APIService",
    }


@pytest.mark.parametrize("chart", ["hub", "worker"])
def test_both_managers_read_what_pods_requests_depend_on_and_write_none_of_it(
    render_hub: Any, render_worker: Any, chart: str
) -> None:
    # LimitRange defaults and RuntimeClass overhead count in Workloads' requests (as
    # upstream's AdjustResources): both managers inform on them, cluster-wide.
    access = Access(render_hub() if chart == "hub" else render_worker())
    for group, resource in (("", "limitranges"), ("node.k8s.io", "runtimeclasses")):
        for verb in ("get", "list", "watch"):
            assert access.can(verb, group, resource), (verb, resource)
        for verb in ("create", "update", "patch", "delete"):
            assert not access.can(verb, group, resource), (verb, resource)
