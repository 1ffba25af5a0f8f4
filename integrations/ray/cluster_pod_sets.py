"""The pod sets of a RayCluster spec, as upstream builds them for every Ray kind.

The head first (one pod, named `head`), then one pod set per worker group in spec order
(named after its groupName lower-cased, `replicas x numOfHosts` pods, replicas 1 when
unset). Upstream counts `replicas` only: minReplicas and maxReplicas bound KubeRay's
autoscaler, which a queued cluster may not use, so there is no minCount (no partial
admission). Two things KubeRay adds to the head pod at run time are counted on the head's
template, so quota matches what really runs:
- with in-tree autoscaling, the autoscaler sidecar (its resources from
  autoscalerOptions.resources, else KubeRay's 500m CPU / 512Mi);
- with GCS fault tolerance, KubeRay's Redis cleanup Job (200m CPU / 256Mi), folded into
  the Ray container's requests as the larger of each.
Topology requests are read from each group's template annotations.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from core.api.quantity import is_quantity, parse_quantity
from core.api.workload import PodSet
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.topology_request import topology_request_from_template
from integrations.ray import ray_fields as fields

AUTOSCALER_CONTAINER: Final = "autoscaler"
_AUTOSCALER_RESOURCES: Final = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
_REDIS_CLEANUP_REQUESTS: Final = {"cpu": "200m", "memory": "256Mi"}


class InvalidRayClusterSpec(ValueError):
    """The cluster spec cannot be turned into pod sets (the head has no container)."""


def _autoscaler_container(cluster: fields.ClusterSpec) -> dict[str, Any]:
    options = cluster.get("autoscalerOptions")
    resources = options.get("resources") if isinstance(options, Mapping) else None
    chosen = resources if isinstance(resources, Mapping) else _AUTOSCALER_RESOURCES
    return {"name": AUTOSCALER_CONTAINER, "resources": copy.deepcopy(dict(chosen))}


def _keep_max(requests: dict[str, Any], extra: Mapping[str, str]) -> None:
    for name, value in extra.items():
        have = requests.get(name)
        if have is None or (is_quantity(have) and parse_quantity(have) < parse_quantity(value)):
            requests[name] = value


def _add_redis_cleanup(template: dict[str, Any]) -> None:
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers or not isinstance(containers[0], dict):
        raise InvalidRayClusterSpec(
            "cannot count the Redis cleanup Job: the head pod template has no Ray container"
        )
    resources = containers[0].setdefault("resources", {})
    _keep_max(resources.setdefault("requests", {}), _REDIS_CLEANUP_REQUESTS)


def head_pod_set(cluster: fields.ClusterSpec, annotations: Mapping[str, str]) -> PodSet:
    template = fold_duplicate_env(fields.head_template(cluster))
    if fields.gcs_fault_tolerance(cluster, annotations):
        _add_redis_cleanup(template)
    if fields.autoscaling(cluster):
        spec = template.setdefault("spec", {})
        spec["containers"] = [*(spec.get("containers") or []), _autoscaler_container(cluster)]
    return PodSet(
        name=fields.HEAD_POD_SET,
        template=template,
        count=1,
        topology_request=topology_request_from_template(template),
    )


def cluster_pod_sets(cluster: fields.ClusterSpec, annotations: Mapping[str, str]) -> list[PodSet]:
    """The head's pod set, then the worker groups' (see module docstring)."""
    out = [head_pod_set(cluster, annotations)]
    for group in fields.worker_groups(cluster):
        template = fold_duplicate_env(fields.worker_template(group))
        out.append(
            PodSet(
                name=fields.group_pod_set_name(group),
                template=template,
                count=fields.worker_count(group),
                topology_request=topology_request_from_template(template),
            )
        )
    return out
