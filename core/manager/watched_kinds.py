"""Every resource the manager reads or writes, named once so no controller retypes a plural.

Job kinds are not here: each names its own (`JobKind.resource`, from the registry).
"""

from __future__ import annotations

from typing import Final

from core.api.registry import kind_info
from core.kube.resources import NAMESPACES, NODES, PODS, Resource

RESOURCE_FLAVORS: Final = kind_info("ResourceFlavor")
COHORTS: Final = kind_info("Cohort")
CLUSTER_QUEUES: Final = kind_info("ClusterQueue")
LOCAL_QUEUES: Final = kind_info("LocalQueue")
WORKLOAD_PRIORITY_CLASSES: Final = kind_info("WorkloadPriorityClass")
ADMISSION_CHECKS: Final = kind_info("AdmissionCheck")
WORKLOADS: Final = kind_info("Workload")
# Topology-aware scheduling: the hierarchy, the nodes it groups, pods using their capacity.
TOPOLOGIES: Final = kind_info("Topology")
# Pods bound to a node and not finished: the only ones that take node capacity.
OCCUPYING_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
# Pods of admitted pod sets: Kueue labels each with its pod set when the job starts.
ADMITTED_PODS: Final = "kueue.x-k8s.io/podset"
POD_PRIORITY_CLASSES: Final = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
# What pods' requests depend on beyond their templates: namespace defaults and overhead.
LIMIT_RANGES: Final = Resource("", "v1", "limitranges", kind="LimitRange")
RUNTIME_CLASSES: Final = Resource(
    "node.k8s.io", "v1", "runtimeclasses", namespaced=False, kind="RuntimeClass"
)

__all__ = [
    "ADMISSION_CHECKS",
    "ADMITTED_PODS",
    "CLUSTER_QUEUES",
    "COHORTS",
    "LIMIT_RANGES",
    "LOCAL_QUEUES",
    "NAMESPACES",
    "NODES",
    "OCCUPYING_PODS",
    "PODS",
    "POD_PRIORITY_CLASSES",
    "RESOURCE_FLAVORS",
    "RUNTIME_CLASSES",
    "TOPOLOGIES",
    "WORKLOADS",
    "WORKLOAD_PRIORITY_CLASSES",
]
