"""Which manager cluster and namespace a command talks to, chosen as kubectl chooses them.

`--kubeconfig` / `$KUBECONFIG` / `~/.kube/config`, `--context` (else the current one),
`-n` (else the context's namespace, else `default`) and `-A` for every namespace. The
hub's namespace (where worker kubeconfig Secrets live) is `--hub-namespace`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.join.cluster_rest import ClusterRest
from cli.join.fleet_file import DEFAULT_HUB_NAMESPACE, ClusterRef
from cli.join.kube_contexts import ClusterEndpoint, ContextError, resolve_endpoint
from cli.ops.ops_errors import ExitStatus, OpsError

MANAGER_TIMEOUT = (5.0, 30.0)
"""(connect, read) seconds for calls to the manager."""


def add_cluster_options(parser: argparse.ArgumentParser, *, namespaced: bool = True) -> None:
    """The kubectl-style connection flags every operations command takes."""
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file of the manager")
    parser.add_argument("--context", help="kubeconfig context of the manager (default: current)")
    if namespaced:
        parser.add_argument(
            "-n", "--namespace", help="namespace (default: the context's, else 'default')"
        )
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def add_hub_namespace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hub-namespace",
        default=DEFAULT_HUB_NAMESPACE,
        help=f"namespace of the hub and its worker kubeconfig Secrets ({DEFAULT_HUB_NAMESPACE})",
    )


@dataclass(frozen=True, slots=True)
class ManagerTarget:
    """The manager's endpoint and the namespace scope of this command (None: all)."""

    endpoint: ClusterEndpoint
    namespace: str | None

    def rest(self) -> ClusterRest:
        return ClusterRest(self.endpoint, timeout=MANAGER_TIMEOUT)


def manager_target(args: argparse.Namespace) -> ManagerTarget:
    """Resolve the flags; an unusable kubeconfig or context is a usage error."""
    ref = ClusterRef(context=args.context, kubeconfig=args.kubeconfig)
    try:
        endpoint = resolve_endpoint("manager", ref)
    except ContextError as error:
        raise OpsError(str(error), ExitStatus.USAGE) from None
    namespace: str | None = None
    if not getattr(args, "all_namespaces", False):
        namespace = getattr(args, "namespace", None) or context_namespace(endpoint)
    return ManagerTarget(endpoint, namespace)


def context_namespace(endpoint: ClusterEndpoint) -> str:
    """The namespace the context names, else `default` (kubectl's rule)."""
    for entry in endpoint.document.get("contexts") or ():
        if isinstance(entry, Mapping) and entry.get("name") == endpoint.context:
            body: Any = entry.get("context") or {}
            if isinstance(body, Mapping) and body.get("namespace"):
                return str(body["namespace"])
    return "default"
