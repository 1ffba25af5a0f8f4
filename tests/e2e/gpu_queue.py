"""One GPU queue on a worker for single-cluster e2e tests: a ResourceFlavor over the kwok
GPU pool, a ClusterQueue open to one namespace only, and the LocalQueue `team` in it."""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
POOL_LABEL = "fleetq.dev/node-pool"
LOCAL_QUEUE = "team"
Json = dict[str, Any]


def gpu_queue_manifests(flavor: str, cluster_queue: str, namespace: str, gpus: int) -> list[Json]:
    """Flavor, ClusterQueue (64 CPUs, 256Gi, `gpus` GPUs) and LocalQueue, in creation order."""
    return [
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
            "spec": {"nodeLabels": {POOL_LABEL: "gpu"}},
        },
        {
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", GPU],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "64"},
                                    {"name": "memory", "nominalQuota": "256Gi"},
                                    {"name": GPU, "nominalQuota": str(gpus)},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE},
            "spec": {"clusterQueue": cluster_queue},
        },
    ]
