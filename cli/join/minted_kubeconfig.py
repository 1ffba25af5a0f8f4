"""The kubeconfig the hub gets for a worker: server, CA and token inline, and nothing else.

The hub refuses kubeconfigs that point at files, run programs or skip TLS checks (its Secret
policy), so this one carries the CA certificate as data and the ServiceAccount token as the
only credential. One cluster, one user, one context, all named after the worker.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import yaml


class KubeconfigShapeError(ValueError):
    """The inputs cannot make a self-contained kubeconfig."""


def build_worker_kubeconfig(
    *, worker: str, server: str, ca_data: str, token: str, user: str
) -> dict[str, Any]:
    """`ca_data` is base64 PEM (as in `certificate-authority-data`)."""
    if not server.startswith("https://"):
        raise KubeconfigShapeError(f"worker {worker}: server {server!r} is not an https:// URL")
    if not ca_data:
        raise KubeconfigShapeError(
            f"worker {worker}: no CA certificate for {server}; the hub verifies TLS, so the "
            "worker's kubeconfig context must carry certificate-authority(-data)"
        )
    if not token:
        raise KubeconfigShapeError(f"worker {worker}: empty token")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": worker, "cluster": {"server": server, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": worker, "context": {"cluster": worker, "user": user}}],
        "current-context": worker,
    }


def render_kubeconfig(document: Mapping[str, Any]) -> str:
    """Stable text: the same document always renders to the same bytes (idempotent Secrets)."""
    return yaml.safe_dump(dict(document), sort_keys=True, default_flow_style=False)


def token_of(text: str) -> str | None:
    """The token of the current context's user in a kubeconfig text, or None."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(document, Mapping):
        return None
    contexts = {c.get("name"): c.get("context") or {} for c in document.get("contexts") or []}
    context = contexts.get(document.get("current-context"))
    if not isinstance(context, Mapping):
        return None
    for entry in document.get("users") or []:
        if isinstance(entry, Mapping) and entry.get("name") == context.get("user"):
            token = (entry.get("user") or {}).get("token")
            return token if isinstance(token, str) and token else None
    return None


def token_claims(token: str) -> dict[str, Any]:
    """The JWT's claims, unverified (only to recognise our own tokens); {} if not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def service_account_uid(token: str) -> str | None:
    """The uid of the ServiceAccount a bound token belongs to (it dies with that account)."""
    claims = token_claims(token).get("kubernetes.io")
    if not isinstance(claims, Mapping):
        return None
    account = claims.get("serviceaccount")
    uid = account.get("uid") if isinstance(account, Mapping) else None
    return uid if isinstance(uid, str) else None
