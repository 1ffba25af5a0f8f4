"""One GPU queue on a worker for single-cluster e2e tests: a ResourceFlavor over the kwok
GPU pool, a ClusterQueue open to one namespace only, and the LocalQueue `team` in it."""

from __future__ import annotations

from typing import Any

from tests.builders import GPU, ClusterQueue, FlavorQuotas, LocalQueue, ResourceFlavor

POOL_LABEL = "fleetq.dev/node-pool"
LOCAL_QUEUE = "team"
Json = dict[str, Any]

__all__ = ["GPU", "LOCAL_QUEUE", "POOL_LABEL", "gpu_queue_manifests"]


def gpu_queue_manifests(flavor: str, cluster_queue: str, namespace: str, gpus: int) -> list[Json]:
    """Flavor, ClusterQueue (64 CPUs, 256Gi, `gpus` GPUs) and LocalQueue, in creation order."""
    quotas = FlavorQuotas(flavor, {"cpu": "64", "memory": "256Gi", GPU: str(gpus)})
    return [
        ResourceFlavor(flavor).node_labels({POOL_LABEL: "gpu"}).obj(),
        ClusterQueue(cluster_queue).only_namespace(namespace).resource_group(quotas).obj(),
        LocalQueue(LOCAL_QUEUE).cluster_queue(cluster_queue).obj(),
    ]
