"""The names upstream's multi-cluster e2e suites give the clusters of a kind fleet.

Upstream's MultiKueue suites run against kind clusters named `kind-manager`,
`kind-worker1` and `kind-worker2` (`MANAGER_KIND_CLUSTER_NAME`, `WORKER1_…`, `WORKER2_…`),
reach each through kubeconfig context `kind-<cluster>` (what `kind export kubeconfig`
writes), and write MultiKueue kubeconfigs whose server is
`https://<cluster>-control-plane:6443` (`util.GetClusterServerAddress`): the name and port
of the kind node container on kind's docker network. A local fleet has no such network, so
each worker's apiserver is also offered at a loopback address of its own, on port 6443,
under that name (devfleet.loopback_relay, devfleet.hosts_file), and the name is in its
serving certificate. These functions are pure; they only say which name goes where.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CONTROL_PLANE_PORT = 6443
"""kube-apiserver's port inside a kind node, the one GetClusterServerAddress names."""
MANAGER_KIND_NAME = "kind-manager"
WORKER_KIND_NAMES = ("kind-worker1", "kind-worker2")
"""Upstream's defaults (suite_test.go of multikueue/baseline, v0.19.2)."""
FIRST_WORKER_OCTET = 2
"""127.0.0.1 stays the fleet's own; worker N (from 0) listens on 127.0.0.<N + 2>."""


@dataclass(frozen=True, slots=True)
class KindCluster:
    """One fleet cluster as the suite names it."""

    role: str
    """The fleet's name for it (`manager`, `worker-1`, ...)."""
    kind_name: str
    """The kind cluster name the suite reads (`kind-worker1`)."""
    loopback: str | None
    """The loopback address its control-plane name resolves to; None: not offered (the
    manager, which no MultiKueue kubeconfig names)."""

    @property
    def context(self) -> str:
        """The kubeconfig context `kind export kubeconfig` writes for it."""
        return f"kind-{self.kind_name}"

    @property
    def control_plane_host(self) -> str:
        return f"{self.kind_name}-control-plane"

    @property
    def control_plane_server(self) -> str:
        """The server URL upstream's GetClusterServerAddress builds for this cluster."""
        return f"https://{self.control_plane_host}:{CONTROL_PLANE_PORT}"

    @property
    def certificate_sans(self) -> tuple[str, ...]:
        """Extra names the apiserver's serving certificate carries, so TLS to the
        control-plane name (and its loopback address) verifies."""
        if self.loopback is None:
            return ()
        return (self.control_plane_host, self.loopback)


def kind_clusters(manager: str, workers: Sequence[str]) -> tuple[KindCluster, ...]:
    """The manager and the first two workers under upstream's default kind names; a
    ValueError when the fleet has fewer than two workers (the suite needs both)."""
    if len(workers) < len(WORKER_KIND_NAMES):
        raise ValueError(
            f"the MultiKueue suite needs {len(WORKER_KIND_NAMES)} workers, the fleet has "
            f"{len(workers)}"
        )
    named = [KindCluster(manager, MANAGER_KIND_NAME, None)]
    for index, (role, kind_name) in enumerate(zip(workers, WORKER_KIND_NAMES, strict=False)):
        named.append(KindCluster(role, kind_name, f"127.0.0.{FIRST_WORKER_OCTET + index}"))
    return tuple(named)
