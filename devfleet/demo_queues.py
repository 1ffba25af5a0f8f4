"""The queues of the demo fleet, named as clusters.example.yaml expects them.

On each worker (what its own admin would set up): one ResourceFlavor per node pool and the
ClusterQueue `cluster-queue` over them, CPU-only pools first so CPU jobs stay off GPU
nodes. A worker without CPU-only nodes lends its CPUs only to GPU work: its queue holds
one CPU per GPU, so a CPU-only job never fits there. On the manager: one flavor, the
ClusterQueue `cluster-queue` holding the workers' total and guarded by the `fleet`
AdmissionCheck (which `fleetq join` creates), and the LocalQueue `user-queue` in each team
namespace. The WorkloadPriorityClasses exist everywhere, as Kueue expects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from core.api.registry import kind_info
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.demo_jobs import LOCAL_QUEUE, NAMESPACES, priority_class_manifests
from devfleet.fleet_queues import GPU, cluster_queue_manifest, node_pools

Progress = Callable[[str], None]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
CLUSTER_QUEUE = "cluster-queue"
"""The worker ClusterQueue clusters.example.yaml's mirrored LocalQueues feed."""
ADMISSION_CHECK = "fleet"
"""The AdmissionCheck clusters.example.yaml's dispatch config makes."""
MANAGER_FLAVOR = "default"


def worker_quota(
    pools: Mapping[str, Mapping[str, Fraction]],
) -> list[tuple[str, Mapping[str, Fraction]]]:
    """(flavor, quota) per pool, CPU-only pools first; see the module docstring."""
    has_cpu_pool = any(not pool.get(GPU) for pool in pools.values())
    order = sorted(pools, key=lambda name: (bool(pools[name].get(GPU)), name))
    flavors: list[tuple[str, Mapping[str, Fraction]]] = []
    for name in order:
        quota = dict(pools[name])
        if not has_cpu_pool and quota.get(GPU):
            quota["cpu"] = quota[GPU]
        flavors.append((name, quota))
    return flavors


def _create(member: ClusterAccess, body: dict[str, Any]) -> None:
    """Create a kueue.x-k8s.io object; one already there is replaced by this spec."""
    from kubernetes import client

    plural = kind_info(body["kind"]).plural
    namespace = body["metadata"].get("namespace")
    body = {"apiVersion": "/".join(KUEUE), **body}
    with member.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        try:
            if namespace:
                custom.create_namespaced_custom_object(*KUEUE, namespace, plural, body)
            else:
                custom.create_cluster_custom_object(*KUEUE, plural, body)
        except client.ApiException as error:
            if error.status != 409:
                raise


def _namespaces(member: ClusterAccess) -> None:
    from kubernetes import client

    with member.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for namespace in NAMESPACES:
            try:
                core.create_namespace({"metadata": {"name": namespace}})
            except client.ApiException as error:
                if error.status != 409:
                    raise


def set_up_queues(fleet: RunningFleet, progress: Progress) -> dict[str, Fraction]:
    """Everything above; returns the manager's quota (the workers' total)."""
    total: dict[str, Fraction] = {}
    for worker in fleet.workers:
        for manifest in priority_class_manifests():
            _create(worker, manifest)
        flavors = worker_quota(node_pools(worker))
        for pool, quota in flavors:
            _create(
                worker,
                {
                    "kind": "ResourceFlavor",
                    "metadata": {"name": pool},
                    "spec": {"nodeLabels": {"fleetq.dev/node-pool": pool}},
                },
            )
            for resource, amount in quota.items():
                total[resource] = total.get(resource, Fraction(0)) + amount
        _create(worker, cluster_queue_manifest(CLUSTER_QUEUE, flavors))
        shown = ", ".join(f"{pool} ({_describe(quota)})" for pool, quota in flavors)
        progress(f"  {worker.name}: ClusterQueue {CLUSTER_QUEUE} over flavors {shown}")
    manager = fleet.manager
    _namespaces(manager)
    for manifest in priority_class_manifests():
        _create(manager, manifest)
    _create(manager, {"kind": "ResourceFlavor", "metadata": {"name": MANAGER_FLAVOR}})
    _create(
        manager,
        cluster_queue_manifest(
            CLUSTER_QUEUE, [(MANAGER_FLAVOR, total)], admission_checks=(ADMISSION_CHECK,)
        ),
    )
    for namespace in NAMESPACES:
        _create(
            manager,
            {
                "kind": "LocalQueue",
                "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
                "spec": {"clusterQueue": CLUSTER_QUEUE},
            },
        )
    progress(
        f"  manager: ClusterQueue {CLUSTER_QUEUE} ({_describe(total)}) with AdmissionCheck "
        f"{ADMISSION_CHECK}; LocalQueue {LOCAL_QUEUE} in {', '.join(NAMESPACES)}"
    )
    return total


def _describe(quota: Mapping[str, Fraction]) -> str:
    shown = []
    for resource in ("cpu", GPU):
        if quota.get(resource):
            shown.append(f"{resource}: {int(quota[resource])}")
    return ", ".join(shown)
