"""Reach a worker the way the hub does: through its MultiKueueCluster's kubeconfig Secret.

The Secret is read from the hub's namespace on the manager and validated by the hub's own
rules (`kubeconfig_from_secret`), so the CLI sees a worker exactly as the hub would: a
kubeconfig the hub refuses is reported with the hub's message, not used. Calls to workers
use a short timeout: one dead worker must not stall `fleetq status` for the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cli.join.cluster_rest import ClusterCallError, ClusterRest
from cli.join.kube_contexts import ClusterEndpoint
from cli.ops.ops_errors import OpsError
from core.api.multikueue import LocationType, MultiKueueCluster
from hub.multikueue.connections.kubeconfig_source import (
    KubeconfigProblem,
    kubeconfig_from_secret,
)

WORKER_TIMEOUT = (2.0, 5.0)
"""(connect, read) seconds for calls to a worker."""


class WorkerAccessError(OpsError):
    """The worker's kubeconfig cannot be had or used; `cell` is the short form for tables."""

    def __init__(self, message: str, cell: str) -> None:
        super().__init__(message)
        self.cell = cell


def worker_endpoint(
    manager: ClusterRest, cluster: MultiKueueCluster, hub_namespace: str
) -> ClusterEndpoint:
    """The worker behind `cluster`, from its Secret; WorkerAccessError says why not."""
    name = cluster.metadata.name
    ref = cluster.spec.cluster_source.kube_config
    if ref is None or not ref.location:
        raise WorkerAccessError(
            f"worker {name}: no kubeConfig in its cluster source", "no kubeconfig"
        )
    if ref.location_type is LocationType.PATH:
        raise WorkerAccessError(
            f"worker {name}: its kubeconfig is a file on the hub's disk ({ref.location}), "
            "which the CLI cannot read",
            "kubeconfig on hub disk",
        )
    try:
        secret = manager.get(f"/api/v1/namespaces/{hub_namespace}/secrets/{ref.location}")
    except ClusterCallError as error:
        raise WorkerAccessError(str(error), "secret unreadable") from None
    try:
        kubeconfig = kubeconfig_from_secret(secret, name=ref.location, namespace=hub_namespace)
    except KubeconfigProblem as error:
        raise WorkerAccessError(f"worker {name}: {error}", error.reason.value) from None
    return endpoint_from_kubeconfig(name, kubeconfig.document, kubeconfig.source)


def endpoint_from_kubeconfig(
    label: str, document: Mapping[str, Any], source: str
) -> ClusterEndpoint:
    """The current context of an already validated kubeconfig as a `ClusterEndpoint`."""
    context = str(document.get("current-context") or "")
    cluster_name = ""
    for entry in document.get("contexts") or ():
        if isinstance(entry, Mapping) and entry.get("name") == context:
            cluster_name = str((entry.get("context") or {}).get("cluster") or "")
    server, ca_data = "", None
    for entry in document.get("clusters") or ():
        if isinstance(entry, Mapping) and entry.get("name") == cluster_name:
            body = entry.get("cluster") or {}
            server = str(body.get("server") or "").rstrip("/")
            ca_data = body.get("certificate-authority-data")
    return ClusterEndpoint(
        label=label,
        context=context,
        source=source,
        server=server,
        ca_data=str(ca_data) if ca_data else None,
        document=document,
    )


def worker_rest(
    manager: ClusterRest, cluster: MultiKueueCluster, hub_namespace: str
) -> ClusterRest:
    """A short-timeout REST client for the worker (close it when done)."""
    return ClusterRest(worker_endpoint(manager, cluster, hub_namespace), timeout=WORKER_TIMEOUT)
