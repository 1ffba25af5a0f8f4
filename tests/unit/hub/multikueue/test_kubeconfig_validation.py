"""Worker kubeconfigs: where they come from, and every reason one is refused."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.api.multikueue import (
    ClusterProfileReference,
    ClusterSource,
    KubeConfig,
    LocationType,
    MultiKueueCluster,
    MultiKueueClusterSpec,
)
from hub.multikueue.connections.active_condition import ClusterActiveReason
from hub.multikueue.connections.kubeconfig_safety import find_insecurity, is_trusted_endpoint
from hub.multikueue.connections.kubeconfig_source import (
    BadKubeConfig,
    InsecureKubeConfig,
    KubeconfigProblem,
    UnsupportedClusterSource,
    allowed_kubeconfig_path,
    kubeconfig_from_file,
    kubeconfig_from_secret,
    resolve_kubeconfig,
    validated_kubeconfig,
)

GOOD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "w",
    "contexts": [{"name": "w", "context": {"cluster": "worker", "user": "hub"}}],
    "clusters": [
        {
            "name": "worker",
            "cluster": {
                "server": "https://worker.example.com:6443",
                "certificate-authority-data": "Q0E=",
            },
        }
    ],
    "users": [{"name": "hub", "user": {"token": "secret-token"}}],
}


def variant(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> Any:
    document = copy.deepcopy(GOOD)
    document["clusters"][0]["cluster"].update(cluster or {})
    document["users"][0]["user"].update(user or {})
    return document


def as_secret(document: Any, key: str = "kubeconfig") -> dict[str, Any]:
    raw = yaml.safe_dump(document).encode()
    return {"metadata": {"name": "w"}, "data": {key: base64.b64encode(raw).decode()}}


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        pytest.param(variant(user={"tokenFile": "/var/run/token"}), "tokenFile is not allowed"),
        pytest.param(
            variant(cluster={"insecure-skip-tls-verify": True}),
            "insecure TLS verification is not allowed for cluster worker",
            id="insecure-tls",
        ),
        pytest.param(
            variant(cluster={"certificate-authority": "/etc/ca.crt"}),
            "certificate-authority file paths are not allowed, "
            "use certificate-authority-data for cluster worker",
            id="ca-file",
        ),
        pytest.param(
            variant(cluster={"server": ""}),
            "server URL is required for cluster worker",
            id="empty-server",
        ),
        pytest.param(
            variant(cluster={"server": "http://worker:8080"}),
            "plain HTTP is not allowed, use https for cluster worker",
            id="plain-http",
        ),
        pytest.param(
            variant(cluster={"server": "https://bad_host:6443"}),
            "untrusted server endpoint",
            id="untrusted-host",
        ),
        pytest.param(
            variant(user={"username": "admin", "password": "pw"}),
            "basic auth is not allowed",
            id="basic-auth",
        ),
        pytest.param(
            variant(user={"exec": {"command": "aws", "apiVersion": "v1"}}),
            "exec plugins are not allowed",
            id="exec-plugin",
        ),
        pytest.param(
            variant(user={"auth-provider": {"name": "gcp"}}),
            "auth providers are not allowed",
            id="auth-provider",
        ),
        pytest.param(
            variant(user={"client-certificate": "/etc/hub.crt"}),
            "client-certificate file paths are not allowed, "
            "use client-certificate-data for user hub",
            id="client-cert-file",
        ),
    ],
)
def test_each_unsafe_kubeconfig_is_refused_with_its_reason(document: Any, reason: str) -> None:
    assert find_insecurity(document) == reason
    with pytest.raises(InsecureKubeConfig) as caught:
        kubeconfig_from_secret(as_secret(document), name="w", namespace="hub")
    assert str(caught.value) == reason
    assert caught.value.reason is ClusterActiveReason.INSECURE_KUBE_CONFIG


def test_entries_outside_the_current_context_are_checked_too() -> None:
    document = copy.deepcopy(GOOD)
    document["users"].append({"name": "spare", "user": {"exec": {"command": "sh"}}})
    assert find_insecurity(document) == "exec plugins are not allowed"


def test_a_self_contained_kubeconfig_is_accepted_with_a_content_fingerprint() -> None:
    first = kubeconfig_from_secret(as_secret(GOOD), name="w", namespace="hub")
    again = kubeconfig_from_secret(as_secret(copy.deepcopy(GOOD)), name="w", namespace="hub")
    rotated = kubeconfig_from_secret(
        as_secret(variant(user={"token": "new-token"})), name="w", namespace="hub"
    )
    assert first.document["current-context"] == "w"
    assert first.source == "Secret hub/w"
    assert first.fingerprint == again.fingerprint != rotated.fingerprint


@pytest.mark.parametrize(
    "server",
    ["https://10.0.0.1:6443", "https://[fd00::1]:6443", "https://API.Example.com", "https://a"],
)
def test_ip_addresses_and_dns_names_are_trusted_endpoints(server: str) -> None:
    assert is_trusted_endpoint(server)


@pytest.mark.parametrize(
    "server", ["https://under_score", "https://x:port", "ftp://host", "host:6443", "https://"]
)
def test_other_endpoints_are_not(server: str) -> None:
    assert not is_trusted_endpoint(server)


def test_a_missing_secret_says_what_to_create() -> None:
    with pytest.raises(BadKubeConfig) as caught:
        kubeconfig_from_secret(None, name="worker-1", namespace="kueue-system")
    assert str(caught.value) == (
        'Secret "worker-1" not found; create it in namespace "kueue-system" with the '
        'worker\'s kubeconfig under the key "kubeconfig"'
    )
    assert caught.value.reason is ClusterActiveReason.BAD_KUBE_CONFIG


def test_a_secret_without_the_key_is_bad() -> None:
    with pytest.raises(BadKubeConfig, match='key "kubeconfig" not found in secret "w"'):
        kubeconfig_from_secret(as_secret(GOOD, key="config"), name="w", namespace="hub")
    with pytest.raises(BadKubeConfig, match="is not base64"):
        kubeconfig_from_secret({"data": {"kubeconfig": "%%%"}}, name="w", namespace="hub")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"{not: [yaml", "failed to parse kubeconfig(apiconfig): ", id="bad-yaml"),
        pytest.param(b"- a list", "failed to parse kubeconfig(apiconfig): not a YAML mapping"),
    ],
)
def test_content_that_does_not_parse_is_insecure_as_upstream_says(
    content: bytes, message: str
) -> None:
    # Upstream's loadClientConfig: fetching fails -> BadKubeConfig; everything
    # validateKubeconfig rejects, parse errors included -> InsecureKubeConfig.
    garbage = {"data": {"kubeconfig": base64.b64encode(content).decode()}}
    with pytest.raises(InsecureKubeConfig) as caught:
        kubeconfig_from_secret(garbage, name="w", namespace="hub")
    assert str(caught.value).startswith(message)
    assert caught.value.reason is ClusterActiveReason.INSECURE_KUBE_CONFIG


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"current-context": ""}, "kubeconfig has no current-context"),
        ({"current-context": "other"}, "kubeconfig has no context named 'other'"),
        ({"clusters": []}, "context 'w' names cluster 'worker', which is not defined"),
        ({"users": []}, "context 'w' names user 'hub', which is not defined"),
    ],
)
def test_a_kubeconfig_that_does_not_resolve_is_insecure(
    change: dict[str, Any], message: str
) -> None:
    document = {**copy.deepcopy(GOOD), **change}
    with pytest.raises(InsecureKubeConfig) as caught:
        validated_kubeconfig(yaml.safe_dump(document).encode(), source="test")
    assert str(caught.value) == message


def test_files_must_be_absolute_without_dotdot_and_stay_under_the_root(tmp_path: Path) -> None:
    root = tmp_path / "kubeconfigs"
    (root / "team").mkdir(parents=True)
    outside = tmp_path / "secret.yaml"
    outside.write_text(yaml.safe_dump(GOOD))
    inside = root / "team" / "w.yaml"
    inside.write_text(yaml.safe_dump(GOOD))
    (root / "link.yaml").symlink_to(inside)
    (root / "escape.yaml").symlink_to(outside)

    assert allowed_kubeconfig_path(str(inside), root) == inside.resolve()
    assert kubeconfig_from_file(str(root / "link.yaml"), root).source.endswith("link.yaml")
    with pytest.raises(BadKubeConfig, match="is not absolute"):
        allowed_kubeconfig_path("team/w.yaml", root)
    with pytest.raises(BadKubeConfig, match=r"must not contain '\.\.'"):
        allowed_kubeconfig_path(f"{root}/team/../team/w.yaml", root)
    with pytest.raises(BadKubeConfig, match="outside"):
        allowed_kubeconfig_path(str(root / "escape.yaml"), root)
    with pytest.raises(BadKubeConfig, match="outside"):
        allowed_kubeconfig_path(str(outside), root)
    missing = f"{root}/nope.yaml"
    with pytest.raises(BadKubeConfig) as caught:
        kubeconfig_from_file(missing, root)
    assert str(caught.value) == f"open {missing}: no such file or directory"


def cluster_with(source: ClusterSource) -> MultiKueueCluster:
    return MultiKueueCluster(spec=MultiKueueClusterSpec(cluster_source=source))


def test_resolution_picks_the_source_the_cluster_names(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(GOOD))
    secrets = {"w": as_secret(GOOD)}

    def resolve(source: ClusterSource) -> str:
        try:
            resolved = resolve_kubeconfig(
                cluster_with(source), secrets=secrets.get, namespace="hub", kubeconfig_root=tmp_path
            )
        except KubeconfigProblem as problem:
            return f"{problem.reason}: {problem}"
        return resolved.source

    assert resolve(ClusterSource(kube_config=KubeConfig(location="w"))) == "Secret hub/w"
    path_source = KubeConfig(location=str(tmp_path / "w.yaml"), location_type=LocationType.PATH)
    assert resolve(ClusterSource(kube_config=path_source)) == f"Path {tmp_path}/w.yaml"
    assert resolve(ClusterSource(kube_config=KubeConfig(location="x"))).startswith(
        'BadKubeConfig: Secret "x" not found'
    )
    profile = ClusterSource(cluster_profile_ref=ClusterProfileReference(name="p"))
    with pytest.raises(UnsupportedClusterSource):
        resolve_kubeconfig(cluster_with(profile), secrets=secrets.get, namespace="hub")
