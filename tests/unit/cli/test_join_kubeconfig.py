"""The minted kubeconfig: server, inline CA and token, nothing else; the hub accepts it."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from cli.join.fleet_file import ClusterRef
from cli.join.kube_contexts import ContextError, resolve_endpoint
from cli.join.minted_kubeconfig import (
    KubeconfigShapeError,
    build_worker_kubeconfig,
    render_kubeconfig,
    service_account_uid,
    token_of,
)
from core.kube.cluster_config import KubeconfigPolicy, check_policy
from hub.multikueue.connections.kubeconfig_safety import find_insecurity

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


def jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.signature"


def minted(token: str = "abc.def.ghi") -> dict[str, object]:
    return build_worker_kubeconfig(
        worker="gpu-east",
        server="https://10.0.0.7:6443",
        ca_data=CA,
        token=token,
        user="fleetq-multikueue",
    )


def test_it_holds_one_cluster_user_and_context_with_everything_inline() -> None:
    document = minted()
    assert document == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gpu-east",
                "cluster": {"server": "https://10.0.0.7:6443", "certificate-authority-data": CA},
            }
        ],
        "users": [{"name": "fleetq-multikueue", "user": {"token": "abc.def.ghi"}}],
        "contexts": [
            {"name": "gpu-east", "context": {"cluster": "gpu-east", "user": "fleetq-multikueue"}}
        ],
        "current-context": "gpu-east",
    }


def test_the_hubs_secret_policy_accepts_it() -> None:
    document = minted()
    assert find_insecurity(document) is None
    check_policy(document, None, KubeconfigPolicy.for_secrets())


def test_rendering_is_stable_so_reruns_write_identical_secrets() -> None:
    assert render_kubeconfig(minted()) == render_kubeconfig(minted())
    assert yaml.safe_load(render_kubeconfig(minted())) == minted()


@pytest.mark.parametrize(
    ("server", "ca", "token", "expected"),
    [
        ("http://10.0.0.7", CA, "t", "is not an https:// URL"),
        ("https://10.0.0.7", "", "t", "no CA certificate"),
        ("https://10.0.0.7", CA, "", "empty token"),
    ],
)
def test_it_refuses_to_build_an_unsafe_kubeconfig(
    server: str, ca: str, token: str, expected: str
) -> None:
    with pytest.raises(KubeconfigShapeError, match=expected):
        build_worker_kubeconfig(worker="w", server=server, ca_data=ca, token=token, user="u")


def test_the_token_and_its_account_are_read_back_from_a_stored_kubeconfig() -> None:
    token = jwt({"kubernetes.io": {"serviceaccount": {"name": "sa", "uid": "uid-1"}}})
    text = render_kubeconfig(minted(token))
    assert token_of(text) == token
    assert service_account_uid(token) == "uid-1"
    assert token_of("not: [a kubeconfig") is None
    assert token_of("users: []") is None
    assert service_account_uid("opaque-token") is None


def write_kubeconfig(path: Path, cluster: dict[str, object], current: str | None = "ctx") -> None:
    document: dict[str, object] = {
        "apiVersion": "v1",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }
    if current:
        document["current-context"] = current
    path.write_text(yaml.safe_dump(document))


def test_a_ca_file_in_the_clis_kubeconfig_is_inlined(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"PEM BYTES")
    write_kubeconfig(
        tmp_path / "config", {"server": "https://w:6443", "certificate-authority": "ca.crt"}
    )
    endpoint = resolve_endpoint("w1", ClusterRef(kubeconfig=tmp_path / "config"))
    assert endpoint.context == "ctx"
    assert endpoint.server == "https://w:6443"
    assert endpoint.ca_data == base64.b64encode(b"PEM BYTES").decode()


def test_unknown_contexts_and_missing_files_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    write_kubeconfig(config, {"server": "https://w:6443"}, current=None)
    with pytest.raises(
        ContextError, match=r"w1: unknown context 'prod' in .*config \(known: ctx\)"
    ):
        resolve_endpoint("w1", ClusterRef(context="prod", kubeconfig=config))
    with pytest.raises(ContextError, match="has no current-context"):
        resolve_endpoint("w1", ClusterRef(kubeconfig=config))
    with pytest.raises(ContextError, match=r"w1: no kubeconfig found at .*nowhere"):
        resolve_endpoint("w1", ClusterRef(kubeconfig=tmp_path / "nowhere"))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'nowhere'}:{config}")
    assert resolve_endpoint("w1", ClusterRef(context="ctx")).server == "https://w:6443"
