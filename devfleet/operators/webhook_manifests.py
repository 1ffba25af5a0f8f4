"""An operator's own webhook manifests, pointed at its out-of-cluster webhook server.

In a cluster, an operator's webhooks are reached through a Service; out of cluster, the
same Mutating/ValidatingWebhookConfigurations (built as the operator's kustomization
builds them) get `https://127.0.0.1:<port><path>` URLs and the CA we issued as caBundle.
Everything here is pure.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from devfleet.operators.spec import WEBHOOK_HOST, OperatorError

Json = dict[str, Any]
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _pointer_tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise OperatorError(f"not a JSON pointer: {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def apply_json_patch(document: Json, operations: Iterable[Mapping[str, Any]]) -> Json:
    """A copy of `document` with RFC 6902 `replace`, `add` and `remove` operations applied
    (what operators' kustomize patches of their webhook manifests use)."""
    result = copy.deepcopy(document)
    for operation in operations:
        op, tokens = operation.get("op"), _pointer_tokens(str(operation.get("path", "")))
        parent: Any = result
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        value = copy.deepcopy(operation.get("value"))
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op == "add":
                parent.insert(index, value)
            elif op == "replace":
                parent[index] = value
            elif op == "remove":
                del parent[index]
            else:
                raise OperatorError(f"unsupported JSON patch operation {op!r}")
        elif op in ("add", "replace"):
            if op == "replace" and last not in parent:
                raise OperatorError(f"replace of a missing member {operation['path']}")
            parent[last] = value
        elif op == "remove":
            del parent[last]
        else:
            raise OperatorError(f"unsupported JSON patch operation {op!r}")
    return result


def kustomized_webhook_manifests(webhook_dir: Path, manifest: str = "manifests.yaml") -> list[Json]:
    """The webhook configurations of `webhook_dir` as its kustomization builds them:
    `manifest` with the kustomization's JSON patches applied (when it has any)."""
    manifests = [
        doc
        for doc in yaml.safe_load_all((webhook_dir / manifest).read_text())
        if isinstance(doc, dict)
    ]
    kustomization_file = webhook_dir / "kustomization.yaml"
    if not kustomization_file.exists():
        return manifests
    kustomization = yaml.safe_load(kustomization_file.read_text()) or {}
    for patch in kustomization.get("patches") or ():
        if "path" not in patch:
            continue  # inline strategic-merge patches only touch names and labels we replace
        target = patch.get("target") or {}
        operations = yaml.safe_load((webhook_dir / patch["path"]).read_text()) or []
        wanted = (target.get("kind"), target.get("name"))
        for index, doc in enumerate(manifests):
            if (doc.get("kind"), (doc.get("metadata") or {}).get("name")) == wanted:
                manifests[index] = apply_json_patch(doc, operations)
    return manifests


def webhook_configuration_name(kind: str, prefix: str) -> str:
    """`<prefix>-mutating` or `<prefix>-validating`."""
    return f"{prefix}-{'mutating' if kind == 'MutatingWebhookConfiguration' else 'validating'}"


def local_webhook_configurations(
    manifests: Iterable[Json], *, port: int, ca_bundle: bytes, prefix: str
) -> list[Json]:
    """The operator's webhook configurations renamed to ours (one of each kind at most)
    and pointed at the out-of-cluster server: each webhook's Service reference becomes
    `https://127.0.0.1:<port>` plus its path, with our CA as `caBundle`."""
    encoded = base64.b64encode(ca_bundle).decode()
    result: list[Json] = []
    for manifest in manifests:
        kind = manifest.get("kind")
        if kind not in WEBHOOK_KINDS:
            continue
        if any(existing["kind"] == kind for existing in result):
            raise OperatorError(f"more than one {kind} in the operator's webhook manifests")
        configuration = copy.deepcopy(manifest)
        configuration["metadata"] = {
            "name": webhook_configuration_name(str(kind), prefix),
            "labels": {"app.kubernetes.io/managed-by": "fleetq-devfleet"},
        }
        for webhook in configuration.get("webhooks") or ():
            service = (webhook.get("clientConfig") or {}).get("service") or {}
            path = service.get("path")
            if not path:
                raise OperatorError(f"webhook {webhook.get('name')} names no path")
            webhook["clientConfig"] = {
                "url": f"https://{WEBHOOK_HOST}:{port}{path}",
                "caBundle": encoded,
            }
        result.append(configuration)
    if not result:
        raise OperatorError("the operator's webhook manifests hold no webhook configuration")
    return result
