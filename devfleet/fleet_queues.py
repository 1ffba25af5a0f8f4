"""Queues sized to a fleet's kwok node pools: pool capacities and ClusterQueue manifests.

The node pools are the `fleetq.dev/node-pool` label of a cluster's nodes; each pool
becomes one ResourceFlavor, and a ClusterQueue covers the resources the sample jobs ask
for (cpu, memory, GPUs) with each flavor's capacity as its nominal quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from core.api.json_types import JsonDict
from devfleet.cluster_access import ClusterAccess

POOL_LABEL = "fleetq.dev/node-pool"
GPU = "nvidia.com/gpu"
QUEUE_RESOURCES = ("cpu", "memory", GPU)
"""What the ClusterQueues cover: what the sample jobs request."""
BINARY_RESOURCES = frozenset({"memory"})
LIFECYCLE_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")


def _reserved_by_taint(node: Any) -> bool:
    """Tainted by its owner (the fleet's `tas` pools): only pods tolerating it may run
    there, so no plain queue covers it; the node lifecycle's own taints do not count."""
    return any(
        not taint.key.startswith(LIFECYCLE_TAINT_PREFIXES) for taint in node.spec.taints or ()
    )


def node_pools(member: ClusterAccess) -> dict[str, dict[str, Fraction]]:
    """Pool label value → allocatable of its nodes, summed, for the queue resources.

    Nodes reserved by a taint (see `_reserved_by_taint`) are left out."""
    from kubernetes import client

    from core.api.quantity import parse_quantity

    pools: dict[str, dict[str, Fraction]] = {}
    with member.api_client() as api_client:
        nodes = client.CoreV1Api(api_client).list_node(label_selector=POOL_LABEL).items
    for node in nodes:
        if _reserved_by_taint(node):
            continue
        pool = pools.setdefault(node.metadata.labels[POOL_LABEL], {})
        for resource in QUEUE_RESOURCES:
            text = (node.status.allocatable or {}).get(resource)
            if text is not None:
                pool[resource] = pool.get(resource, Fraction(0)) + parse_quantity(text)
    return pools


def cluster_queue_manifest(
    name: str,
    flavors: list[tuple[str, Mapping[str, Fraction]]],
    *,
    preemption: Mapping[str, Any] | None = None,
    admission_checks: tuple[str, ...] = (),
) -> JsonDict:
    """One resource group over QUEUE_RESOURCES; a flavor lacking a resource gets 0 of it."""
    from core.api.quantity import format_quantity

    spec: JsonDict = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(QUEUE_RESOURCES),
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {
                                "name": resource,
                                "nominalQuota": str(
                                    format_quantity(
                                        quota.get(resource, Fraction(0)),
                                        binary=resource in BINARY_RESOURCES,
                                    )
                                ),
                            }
                            for resource in QUEUE_RESOURCES
                        ],
                    }
                    for flavor, quota in flavors
                ],
            }
        ],
    }
    if preemption:
        spec["preemption"] = dict(preemption)
    if admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": check} for check in admission_checks]
        }
    return {"kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}
