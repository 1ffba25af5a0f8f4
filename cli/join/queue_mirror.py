"""Namespaces and LocalQueues a worker must have before MultiKueue can dispatch to it.

MultiKueue creates the remote Workload in the same namespace, under the same LocalQueue
name, as on the manager; a worker lacking either refuses it. The LocalQueue points at the
worker's own ClusterQueue, which the worker's admin owns: join names it, never creates it.
"""

from __future__ import annotations

from cli.join.fleet_file import MirroredNamespace
from cli.join.worker_identity import MANAGED_BY, MANAGED_BY_LABEL, Manifest, namespace_manifest
from core.api.groups import KUEUE_API_VERSION


def local_queue_manifest(namespace: str, name: str, cluster_queue: str) -> Manifest:
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
        },
        "spec": {"clusterQueue": cluster_queue},
    }


def mirror_manifests(mirror: tuple[MirroredNamespace, ...]) -> list[Manifest]:
    """Each namespace followed by its LocalQueues."""
    manifests: list[Manifest] = []
    for namespace in mirror:
        manifests.append(namespace_manifest(namespace.name))
        manifests.extend(
            local_queue_manifest(namespace.name, queue.name, queue.cluster_queue)
            for queue in namespace.queues
        )
    return manifests


def cluster_queues_named(mirror: tuple[MirroredNamespace, ...]) -> list[str]:
    """The worker ClusterQueues the mirrored LocalQueues need, each once, sorted."""
    return sorted({queue.cluster_queue for namespace in mirror for queue in namespace.queues})
