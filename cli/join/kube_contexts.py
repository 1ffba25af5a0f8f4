"""Find a cluster the way kubectl does: a context, in a kubeconfig file or in $KUBECONFIG.

Several files merge as kubectl merges them (the first file to define a name wins), and file
references (CA, client certificate) are made absolute against the file that holds them, so
the merged document can be handed to the client as one. The CLI's own credentials may use
anything the client supports (exec plugins included); only the kubeconfig join *mints*
for the hub must be self-contained.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cli.join.fleet_file import ClusterRef

DEFAULT_KUBECONFIG = Path("~/.kube/config")
_FILE_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}
_BODY = {"clusters": "cluster", "users": "user", "contexts": "context"}


class ContextError(ValueError):
    """A context or kubeconfig cannot be used; the message names the cluster and the file."""


@dataclass(frozen=True, slots=True)
class ClusterEndpoint:
    """One cluster of the fleet as the CLI reaches it."""

    label: str
    """`manager` or the worker's name."""
    context: str
    source: str
    """The kubeconfig file(s) the context came from, for messages."""
    server: str
    ca_data: str | None
    """base64 PEM of the cluster's CA (inlined from a file if need be), or None."""
    document: Mapping[str, Any]
    """The merged kubeconfig, file references made absolute."""

    def api_client(self) -> Any:
        """A synchronous `kubernetes` ApiClient for this context."""
        from kubernetes import config

        return config.new_client_from_config_dict(
            dict(self.document), context=self.context, persist_config=False
        )


def kubeconfig_paths(ref: ClusterRef) -> list[Path]:
    """The files to read: the one named, else $KUBECONFIG's, else ~/.kube/config."""
    if ref.kubeconfig is not None:
        return [ref.kubeconfig]
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(part).expanduser() for part in env.split(os.pathsep) if part]
    return paths or [DEFAULT_KUBECONFIG.expanduser()]


def resolve_endpoint(label: str, ref: ClusterRef) -> ClusterEndpoint:
    """The named (or current) context of `ref`, checked to exist and to name a server."""
    paths = kubeconfig_paths(ref)
    source = os.pathsep.join(str(path) for path in paths)
    document = merged_kubeconfig(paths, label)
    context_name = ref.context or document.get("current-context")
    if not context_name:
        raise ContextError(
            f"{label}: kubeconfig {source} has no current-context; set `context` in the file"
        )
    contexts = _by_name(document, "contexts")
    if context_name not in contexts:
        known = ", ".join(sorted(contexts)) or "none"
        raise ContextError(
            f"{label}: unknown context {context_name!r} in {source} (known: {known})"
        )
    context = contexts[context_name]
    cluster = _by_name(document, "clusters").get(str(context.get("cluster", "")))
    if cluster is None:
        raise ContextError(
            f"{label}: context {context_name!r} names cluster {context.get('cluster')!r}, "
            f"which {source} does not define"
        )
    server = str(cluster.get("server") or "")
    if not server:
        raise ContextError(f"{label}: cluster of context {context_name!r} has no server URL")
    return ClusterEndpoint(
        label=label,
        context=str(context_name),
        source=source,
        server=server.rstrip("/"),
        ca_data=_ca_data(cluster, label),
        document=document,
    )


def merged_kubeconfig(paths: list[Path], label: str) -> dict[str, Any]:
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    read_any = False
    for path in paths:
        if not path.exists():
            continue
        try:
            document = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ContextError(f"{label}: cannot read kubeconfig {path}: {error}") from None
        if not isinstance(document, Mapping):
            raise ContextError(f"{label}: kubeconfig {path} is not a YAML mapping")
        read_any = True
        if document.get("current-context") and "current-context" not in merged:
            merged["current-context"] = document["current-context"]
        for section in ("clusters", "contexts", "users"):
            known = {entry.get("name") for entry in merged[section]}
            for entry in document.get(section) or []:
                if isinstance(entry, Mapping) and entry.get("name") not in known:
                    merged[section].append(_absolute_files(section, entry, path.parent))
    if not read_any:
        missing = ", ".join(str(path) for path in paths)
        raise ContextError(f"{label}: no kubeconfig found at {missing}")
    return merged


def _absolute_files(section: str, entry: Mapping[str, Any], base: Path) -> dict[str, Any]:
    copy = dict(entry)
    body = dict(entry.get(_BODY[section]) or {})
    for key in _FILE_FIELDS.get(section, ()):
        value = body.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            body[key] = str(base / value)
    copy[_BODY[section]] = body
    return copy


def _by_name(document: Mapping[str, Any], section: str) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for entry in document.get(section) or []:
        body = entry.get(_BODY[section])
        found[str(entry.get("name"))] = body if isinstance(body, Mapping) else {}
    return found


def _ca_data(cluster: Mapping[str, Any], label: str) -> str | None:
    data = cluster.get("certificate-authority-data")
    if data:
        return str(data)
    path = cluster.get("certificate-authority")
    if not path:
        return None
    try:
        return base64.b64encode(Path(str(path)).expanduser().read_bytes()).decode()
    except OSError as error:
        raise ContextError(f"{label}: cannot read CA file {path}: {error.strerror}") from None
