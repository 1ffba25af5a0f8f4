"""Where a cluster is and how to authenticate to it: a kubeconfig or the pod's service account.

kubernetes-asyncio does the parsing (contexts, inline `*-data` fields, token files, the
in-cluster service-account files); this module turns its result into what aiohttp needs: a
server URL, an `ssl.SSLContext` and an Authorization header source. fleetq's auth is
exec-free: kubeconfigs asking to run an exec plugin or an auth-provider are refused with a
message saying what to use instead. A `KubeconfigPolicy` decides what else is acceptable;
kubeconfigs that arrive in Secrets (MultiKueue workers) use the strict one, which also
refuses file references and insecure TLS, so a Secret can never make the hub read local
files or skip certificate checks.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import incluster_config
from kubernetes_asyncio.config.kube_config import KubeConfigLoader

DEFAULT_KUBECONFIG = Path("~/.kube/config")


class ClusterConfigError(ValueError):
    """The kubeconfig (or in-cluster environment) cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class KubeconfigPolicy:
    """Which kubeconfig features are acceptable. Exec plugins and auth-providers never are."""

    allow_file_references: bool = True
    allow_insecure: bool = False

    @classmethod
    def for_secrets(cls) -> KubeconfigPolicy:
        """For kubeconfigs stored in Secrets: self-contained, TLS verified."""
        return cls(allow_file_references=False, allow_insecure=False)


class Credentials:
    """Produces the Authorization header; re-reads rotating service-account tokens."""

    __slots__ = ("_configuration", "_static")

    def __init__(self, static: str | None, configuration: Configuration | None = None) -> None:
        self._static = static
        self._configuration = configuration

    async def authorization(self) -> str | None:
        if self._configuration is None:
            return self._static
        value = await self._configuration.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Everything a KubeClient needs to reach one cluster."""

    name: str
    server: str
    ssl_context: ssl.SSLContext | None
    credentials: Credentials
    tls_server_name: str | None = None
    proxy: str | None = None


_FILE_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


def _named(entries: Any, name: str, what: str) -> Mapping[str, Any]:
    for entry in entries or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(what)
            return body if isinstance(body, Mapping) else {}
    raise ClusterConfigError(f"kubeconfig has no {what} named {name!r}")


def check_policy(
    kubeconfig: Mapping[str, Any], context: str | None, policy: KubeconfigPolicy
) -> None:
    """Refuse kubeconfig features fleetq does not run or the policy forbids."""
    context_name = context or kubeconfig.get("current-context")
    if not context_name:
        raise ClusterConfigError("kubeconfig has no current-context; name a context")
    ctx = _named(kubeconfig.get("contexts"), str(context_name), "context")
    cluster = _named(kubeconfig.get("clusters"), str(ctx.get("cluster", "")), "cluster")
    user_name = ctx.get("user")
    user = _named(kubeconfig.get("users"), str(user_name), "user") if user_name else {}
    where = f"kubeconfig context {context_name!r}"
    if "exec" in user:
        raise ClusterConfigError(
            f"{where}: exec credential plugins are not supported; "
            "use a client certificate or a (service account) token"
        )
    if "auth-provider" in user:
        raise ClusterConfigError(
            f"{where}: auth-provider {user['auth-provider'].get('name', '')!r} is not "
            "supported; use a client certificate or a token"
        )
    server = str(cluster.get("server", ""))
    if not server:
        raise ClusterConfigError(f"{where}: the cluster has no server URL")
    insecure = bool(cluster.get("insecure-skip-tls-verify")) or server.startswith("http:")
    if insecure and not policy.allow_insecure:
        raise ClusterConfigError(
            f"{where}: insecure connection to {server} (plain HTTP or "
            "insecure-skip-tls-verify) is not allowed; give certificate-authority-data"
        )
    if not policy.allow_file_references:
        for section, body in (("cluster", cluster), ("user", user)):
            for field in _FILE_FIELDS[section]:
                if body.get(field):
                    raise ClusterConfigError(
                        f"{where}: {section} field {field!r} refers to a local file, which "
                        f"is not allowed here; inline it as {field}-data (or token)"
                    )


async def from_kubeconfig(
    source: Path | str | Mapping[str, Any],
    *,
    context: str | None = None,
    name: str | None = None,
    policy: KubeconfigPolicy | None = None,
) -> ClusterConfig:
    """Load a kubeconfig (a file path, or the parsed document) for one context."""
    policy = policy or KubeconfigPolicy()
    if isinstance(source, Mapping):
        document, base_path = source, None
    else:
        path = Path(source).expanduser()
        document = await asyncio.to_thread(_read_yaml, path)
        base_path = str(path.parent)
    check_policy(document, context, policy)
    loader = KubeConfigLoader(
        config_dict=dict(document), active_context=context, config_base_path=base_path
    )
    configuration = _fresh_configuration()
    await loader.load_and_set(configuration)
    cluster_name = name or str(context or document.get("current-context"))
    return await _to_cluster_config(cluster_name, configuration)


async def from_in_cluster(*, name: str = "in-cluster") -> ClusterConfig:
    """The pod's service account: API host from the environment, token re-read as it rotates."""
    configuration = _fresh_configuration()
    try:
        await asyncio.to_thread(incluster_config.load_incluster_config, configuration)
    except incluster_config.ConfigException as error:
        raise ClusterConfigError(
            f"not running in a pod with a service account: {error} (in-cluster configuration "
            f"reads {incluster_config.SERVICE_TOKEN_FILENAME} and "
            f"{incluster_config.SERVICE_CERT_FILENAME}, mounted by automountServiceAccountToken, "
            "and KUBERNETES_SERVICE_HOST/PORT; out of cluster, pass --kubeconfig)"
        ) from None
    return await _to_cluster_config(name, configuration, refreshing=True)


async def load_cluster_config(kubeconfig: Path | str | None = None) -> ClusterConfig:
    """The usual resolution order: explicit file, in-cluster, $KUBECONFIG, ~/.kube/config."""
    if kubeconfig:
        return await from_kubeconfig(kubeconfig)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return await from_in_cluster()
    env = os.environ.get("KUBECONFIG", "")
    first = next((part for part in env.split(os.pathsep) if part), None)
    return await from_kubeconfig(first or DEFAULT_KUBECONFIG)


def _read_yaml(path: Path) -> Mapping[str, Any]:
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ClusterConfigError(f"cannot read kubeconfig {path}: {error.strerror}") from None
    if not isinstance(document, Mapping):
        raise ClusterConfigError(f"kubeconfig {path} is not a YAML mapping")
    return document


def _fresh_configuration() -> Configuration:
    # Configuration() would copy the process-wide default; fleetq keeps one per cluster.
    return type.__call__(Configuration)


async def _to_cluster_config(
    name: str, configuration: Configuration, *, refreshing: bool = False
) -> ClusterConfig:
    server = str(configuration.host).rstrip("/")
    context = None
    if server.startswith("https:"):
        context = await asyncio.to_thread(
            _ssl_context,
            configuration.ssl_ca_cert,
            configuration.cert_file,
            configuration.key_file,
            bool(configuration.verify_ssl),
        )
    token = configuration.api_key.get("BearerToken")
    credentials = Credentials(str(token) if token else None, configuration if refreshing else None)
    return ClusterConfig(
        name=name,
        server=server,
        ssl_context=context,
        credentials=credentials,
        tls_server_name=getattr(configuration, "tls_server_name", None) or None,
        proxy=configuration.proxy or None,
    )


def _ssl_context(
    ca_file: str | None, cert_file: str | None, key_file: str | None, verify: bool
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file or None)
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
