"""Kubeconfig loading: exec-free auth, and what the strict policy for Secrets refuses."""

from __future__ import annotations

from typing import Any

import pytest

from core.kube.cluster_config import (
    ClusterConfigError,
    KubeconfigPolicy,
    check_policy,
    from_kubeconfig,
)


def kubeconfig(cluster: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "ctx",
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
    }


HTTPS = {"server": "https://10.0.0.1:6443", "certificate-authority-data": "Zm9v"}


@pytest.mark.parametrize(
    ("user", "message"),
    [
        (
            {"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1"}},
            "exec credential plugins",
        ),
        ({"auth-provider": {"name": "gcp"}}, "auth-provider 'gcp'"),
    ],
)
def test_kubeconfigs_that_would_run_programs_are_refused(
    user: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        check_policy(kubeconfig(HTTPS, user), None, KubeconfigPolicy())


def test_insecure_connections_need_explicit_permission() -> None:
    insecure = kubeconfig(
        {"server": "https://h:6443", "insecure-skip-tls-verify": True}, {"token": "t"}
    )
    plain = kubeconfig({"server": "http://h:8080"}, {"token": "t"})
    for document in (insecure, plain):
        with pytest.raises(ClusterConfigError, match="not allowed"):
            check_policy(document, None, KubeconfigPolicy())
        check_policy(document, None, KubeconfigPolicy(allow_insecure=True))


@pytest.mark.parametrize(
    ("cluster", "user", "field"),
    [
        (
            {"server": "https://h", "certificate-authority": "/etc/ca.crt"},
            {"token": "t"},
            "certificate-authority",
        ),
        (HTTPS, {"client-certificate": "/c.crt", "client-key-data": "eA=="}, "client-certificate"),
        (HTTPS, {"tokenFile": "/var/run/token"}, "tokenFile"),
    ],
)
def test_secrets_may_not_point_at_local_files(
    cluster: dict[str, Any], user: dict[str, Any], field: str
) -> None:
    document = kubeconfig(cluster, user)
    check_policy(document, None, KubeconfigPolicy())  # fine for a file the operator gave us
    with pytest.raises(ClusterConfigError, match=f"'{field}' refers to a local file"):
        check_policy(document, None, KubeconfigPolicy.for_secrets())


def test_a_missing_context_is_named() -> None:
    with pytest.raises(ClusterConfigError, match="no context named 'other'"):
        check_policy(kubeconfig(HTTPS, {"token": "t"}), "other", KubeconfigPolicy())


async def test_a_token_kubeconfig_yields_a_bearer_header() -> None:
    document = kubeconfig({"server": "http://127.0.0.1:8080/"}, {"token": "s3cret"})
    config = await from_kubeconfig(
        document, policy=KubeconfigPolicy(allow_insecure=True), name="w1"
    )
    assert config.name == "w1"
    assert config.server == "http://127.0.0.1:8080"
    assert config.ssl_context is None
    assert await config.credentials.authorization() == "Bearer s3cret"


async def test_a_missing_file_gives_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(ClusterConfigError, match="cannot read kubeconfig"):
        await from_kubeconfig(tmp_path / "nope.yaml")
