"""Webhook rules every queued Ray kind applies to its RayCluster spec, as upstream's.

- No in-tree autoscaling: once a queue reserved quota for the cluster's pod sets, the
  cluster should use them, not grow or shrink on its own. Upstream lets an autoscaling
  cluster in only as an elastic job (Workload slices, the ElasticJobsViaWorkloadSlices
  gate and the `kueue.x-k8s.io/elastic-job` annotation); fleetq's workload slices serve
  batch Jobs so far, so a Ray cluster's autoscaling is refused always — upstream's
  behaviour without elastic jobs.
- At most 18 pod sets (a Workload's limit): the head plus 17 worker groups.
- No worker group may be called `head`, the head's pod set name.
"""

from __future__ import annotations

from core.api.validation.field_errors import FieldError, FieldPath, forbidden, too_many
from core.api.workload import MAX_POD_SETS
from integrations.framework.job_validation import invalid_value
from integrations.ray import ray_fields as fields


def validate_cluster_spec(
    cluster: fields.ClusterSpec, path: FieldPath, *, autoscaling_detail: str
) -> list[FieldError]:
    """The rules of the module docstring for the cluster spec at `path`."""
    errors: list[FieldError] = []
    if fields.autoscaling(cluster):
        errors.append(
            invalid_value(path.child("enableInTreeAutoscaling"), True, autoscaling_detail)
        )
    count = fields.expected_pod_set_count(cluster)
    if count > MAX_POD_SETS:
        errors.append(
            too_many(
                path.child("workerGroupSpecs"),
                f"must have at most {MAX_POD_SETS} pod sets (the head and"
                f" {MAX_POD_SETS - 1} worker groups), has {count}",
            )
        )
    for index, group in enumerate(fields.worker_groups(cluster)):
        if fields.group_pod_set_name(group) == fields.HEAD_POD_SET:
            errors.append(
                forbidden(
                    path.child("workerGroupSpecs").index(index).child("groupName"),
                    f'"{fields.HEAD_POD_SET}" is reserved for the head group',
                )
            )
    return errors
