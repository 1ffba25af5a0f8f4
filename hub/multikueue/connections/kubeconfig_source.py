"""Where a MultiKueueCluster's kubeconfig comes from, and whether it may be used.

Two sources, as upstream: a Secret in the hub's namespace (key `kubeconfig`), read from the
hub's Secret cache, or a file on the hub's disk. A file must be named by an absolute path
without `..` and lie under the kubeconfig root (`/etc/multikueue/kubeconfigs/`) after
symlinks are resolved, so a MultiKueueCluster cannot make the hub read arbitrary files.

Problems are misconfigurations, told apart from unreachable workers. As upstream's
`loadClientConfig` splits them: `BadKubeConfig` when the kubeconfig cannot be fetched (the
Secret, its key or the file is missing, or the path is not allowed) and
`InsecureKubeConfig` for anything wrong with the content it fetched, which upstream's
`validateKubeconfig` judges as a whole: content that does not parse, or does not resolve
to a cluster, as well as content that asks for something the hub must not do. Both carry
the condition reason and a message that says what to fix; neither is retried until the
object, the Secret or the file changes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from core.api.multikueue import KUBECONFIG_SECRET_KEY, LocationType, MultiKueueCluster
from core.kube.cluster_config import ClusterConfigError, KubeconfigPolicy, check_policy
from hub.multikueue.connections.active_condition import ClusterActiveReason
from hub.multikueue.connections.kubeconfig_safety import find_insecurity

DEFAULT_KUBECONFIG_ROOT = Path("/etc/multikueue/kubeconfigs")

SecretLookup = Callable[[str], Mapping[str, Any] | None]
"""Name → the Secret (decoded JSON) in the hub's namespace, or None when there is none."""


class KubeconfigProblem(Exception):
    """The kubeconfig cannot be used as configured; `reason` is the condition reason."""

    reason: ClassVar[ClusterActiveReason]


class BadKubeConfig(KubeconfigProblem):
    reason = ClusterActiveReason.BAD_KUBE_CONFIG


class InsecureKubeConfig(KubeconfigProblem):
    reason = ClusterActiveReason.INSECURE_KUBE_CONFIG


class UnsupportedClusterSource(KubeconfigProblem):
    reason = ClusterActiveReason.CLUSTER_PROFILE_UNSUPPORTED


@dataclass(frozen=True, slots=True)
class WorkerKubeconfig:
    """A validated kubeconfig and a fingerprint that changes whenever its content does."""

    document: Mapping[str, Any]
    fingerprint: str
    source: str
    """Where it came from, for logs: `Secret ns/name` or `Path /etc/...`."""


def resolve_kubeconfig(
    cluster: MultiKueueCluster,
    *,
    secrets: SecretLookup,
    namespace: str,
    kubeconfig_root: Path = DEFAULT_KUBECONFIG_ROOT,
) -> WorkerKubeconfig:
    """The cluster's kubeconfig, validated. Path sources read the disk: call off the loop."""
    source = cluster.spec.cluster_source
    if source.cluster_profile_ref is not None:
        raise UnsupportedClusterSource(
            "clusterProfileRef is not supported by fleetq; use kubeConfig (Secret or Path)"
        )
    ref = source.kube_config
    if ref is None or not ref.location:
        raise BadKubeConfig("kubeconfig reference is nil")
    if ref.location_type is LocationType.PATH:
        return kubeconfig_from_file(ref.location, kubeconfig_root)
    return kubeconfig_from_secret(secrets(ref.location), name=ref.location, namespace=namespace)


def kubeconfig_from_secret(
    secret: Mapping[str, Any] | None, *, name: str, namespace: str
) -> WorkerKubeconfig:
    """Read and validate the `kubeconfig` key of a Secret (as the apiserver returns it)."""
    create_hint = (
        f'create it in namespace "{namespace}" with the worker\'s kubeconfig under the key '
        f'"{KUBECONFIG_SECRET_KEY}"'
    )
    if secret is None:
        raise BadKubeConfig(f'Secret "{name}" not found; {create_hint}')
    encoded = (secret.get("data") or {}).get(KUBECONFIG_SECRET_KEY)
    if encoded is None:
        raise BadKubeConfig(
            f'key "{KUBECONFIG_SECRET_KEY}" not found in secret "{name}"; '
            f"put the worker's kubeconfig under that key"
        )
    try:
        raw = base64.b64decode(str(encoded), validate=True)
    except (binascii.Error, ValueError):
        raise BadKubeConfig(
            f'secret "{name}": key "{KUBECONFIG_SECRET_KEY}" is not base64'
        ) from None
    return validated_kubeconfig(raw, source=f"Secret {namespace}/{name}")


def kubeconfig_from_file(location: str, root: Path = DEFAULT_KUBECONFIG_ROOT) -> WorkerKubeconfig:
    """Read and validate a kubeconfig file that must lie under `root` (blocking I/O)."""
    path = allowed_kubeconfig_path(location, root)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadKubeConfig(f"open {location}: no such file or directory") from None
    except OSError as error:
        raise BadKubeConfig(f"open {location}: {error.strerror or error}") from None
    return validated_kubeconfig(raw, source=f"Path {location}")


def allowed_kubeconfig_path(location: str, root: Path = DEFAULT_KUBECONFIG_ROOT) -> Path:
    """The file `location` names, if it is allowed; symlinks are resolved before the check."""
    path = Path(location)
    if not path.is_absolute():
        raise BadKubeConfig(f"path {location!r} is not absolute; use a path under {root}/")
    if ".." in path.parts:
        raise BadKubeConfig(f"path {location!r} must not contain '..'")
    resolved = path.resolve()
    real_root = root.resolve()
    if not resolved.is_relative_to(real_root):
        raise BadKubeConfig(
            f"path {location!r} resolves to {str(resolved)!r}, outside {root}/; "
            "kubeconfig files must lie under that folder"
        )
    return resolved


def validated_kubeconfig(raw: bytes, *, source: str) -> WorkerKubeconfig:
    """Parse kubeconfig bytes and refuse anything unsafe (see kubeconfig_safety)."""
    document = parse_kubeconfig(raw)
    _check_structure(document)
    insecurity = find_insecurity(document)
    if insecurity:
        raise InsecureKubeConfig(insecurity)
    try:
        check_policy(document, None, KubeconfigPolicy.for_secrets())
    except ClusterConfigError as error:
        raise InsecureKubeConfig(str(error)) from None
    return WorkerKubeconfig(document, hashlib.sha256(raw).hexdigest(), source)


_PARSE_FAILED = "failed to parse kubeconfig(apiconfig)"
"""Upstream's words for content that does not parse (its reason: InsecureKubeConfig)."""


def parse_kubeconfig(raw: bytes) -> Mapping[str, Any]:
    try:
        document = yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise InsecureKubeConfig(f"{_PARSE_FAILED}: {_first_line(error)}") from None
    if not isinstance(document, Mapping):
        raise InsecureKubeConfig(f"{_PARSE_FAILED}: not a YAML mapping")
    return document


def _check_structure(document: Mapping[str, Any]) -> None:
    """The current context must exist and name a cluster that exists (upstream finds these
    when it builds the REST config inside validateKubeconfig: InsecureKubeConfig too)."""
    current = document.get("current-context")
    if not current:
        raise InsecureKubeConfig("kubeconfig has no current-context")
    context = _named(document, "contexts", "context", str(current))
    if context is None:
        raise InsecureKubeConfig(f"kubeconfig has no context named {current!r}")
    cluster = str(context.get("cluster") or "")
    if _named(document, "clusters", "cluster", cluster) is None:
        raise InsecureKubeConfig(
            f"context {current!r} names cluster {cluster!r}, which is not defined"
        )
    user = context.get("user")
    if user and _named(document, "users", "user", str(user)) is None:
        raise InsecureKubeConfig(f"context {current!r} names user {user!r}, which is not defined")


def _named(document: Mapping[str, Any], section: str, body: str, name: str) -> Any:
    for entry in document.get(section) or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            content = entry.get(body)
            return content if isinstance(content, Mapping) else {}
    return None


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
