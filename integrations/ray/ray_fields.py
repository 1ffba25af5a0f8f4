"""Reading KubeRay's ray.io/v1 objects kept as plain dicts, with the operator's defaults.

A RayJob, a RayCluster and a RayService all carry a RayCluster spec (a RayJob and a
RayService in `spec.rayClusterSpec`, a RayCluster as its `spec`): a head group and worker
groups, each with a pod template. The readers here take such a cluster spec; the kinds
say where theirs lives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, int_value, section, spec, status

RAY_GROUP: Final = "ray.io"
RAY_VERSION: Final = "v1"
KUBERAY_CONTROLLER_NAME: Final = "ray.io/kuberay-operator"
"""The managedBy value meaning "KubeRay's own controller" (same as unset)."""
RAY_CLUSTER_LABEL: Final = "ray.io/cluster"
"""Label KubeRay puts on every pod of a RayCluster, valued with the cluster's name."""
RAY_FT_ENABLED_ANNOTATION: Final = "ray.io/ft-enabled"
"""KubeRay's GCS fault tolerance switch (also on when gcsFaultToleranceOptions is set)."""

HEAD_POD_SET: Final = "head"
"""The head group's pod set name; no worker group may take it."""

ClusterSpec = Mapping[str, Any]


def head_template(cluster: ClusterSpec) -> Mapping[str, Any]:
    return section(section(cluster, "headGroupSpec"), "template")


def worker_groups(cluster: ClusterSpec) -> list[Mapping[str, Any]]:
    """workerGroupSpecs, in order (entries that are not objects are skipped)."""
    return [g for g in cluster.get("workerGroupSpecs") or () if isinstance(g, Mapping)]


def group_pod_set_name(group: Mapping[str, Any]) -> str:
    """A worker group's pod set name: its groupName lower-cased, as upstream names it."""
    return str(group.get("groupName") or "").lower()


def worker_template(group: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(group, "template")


def worker_count(group: Mapping[str, Any]) -> int:
    """Pods of a worker group: replicas (1 when unset) times numOfHosts when above 1."""
    replicas = int_value(group.get("replicas"))
    count = 1 if replicas is None else replicas
    hosts = int_value(group.get("numOfHosts"))
    return count * hosts if hosts is not None and hosts > 1 else count


def autoscaling(cluster: ClusterSpec) -> bool:
    return cluster.get("enableInTreeAutoscaling") is True


def gcs_fault_tolerance(cluster: ClusterSpec, annotations: Mapping[str, str]) -> bool:
    """KubeRay's IsGCSFaultToleranceEnabled: the annotation says true, or options are set."""
    flag = str(annotations.get(RAY_FT_ENABLED_ANNOTATION, "")).lower() == "true"
    return flag or cluster.get("gcsFaultToleranceOptions") is not None


def expected_pod_set_count(cluster: ClusterSpec) -> int:
    """The head plus one pod set per worker group."""
    return 1 + len(worker_groups(cluster))


def cluster_state(job: Job) -> str:
    """A RayCluster's status.state ("ready", "suspended", "failed", ...)."""
    return str(status(job).get("state") or "")


def nested_cluster_spec(job: Job) -> Mapping[str, Any]:
    """spec.rayClusterSpec of a RayJob or RayService."""
    return section(spec(job), "rayClusterSpec")
