"""ray.io/v1 RayCluster <-> Workload: the `ray.io/raycluster` kind.

A RayCluster is queued as one Workload with the head and each worker group as pod sets
(`cluster_pod_sets`). It is long-running: it never finishes, so once admitted it holds its
quota until it is deleted, suspended by its user, or evicted. Start unsuspends it
(`spec.suspend: false`) with every group's template pointed at its flavors; stop suspends
it and restores the templates in one write (KubeRay then deletes its pods). It is active
and its pods are ready while KubeRay reports `status.state: ready`.

A RayCluster that a queued kind created (a RayJob's, a RayService's: its controller owner)
is never queued on its own: the owner's Workload already covers its pods (the registry's
queued-as-a-whole rule, from those kinds' `child_kinds`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError, FieldPath
from core.api.workload import PodSet, ReclaimablePod, Workload
from core.api.workload_slices import ELASTIC_JOB_ANNOTATION
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import (
    JobFinish,
    JobResource,
    JobSubresource,
    JobWrite,
    StatusSync,
)
from integrations.framework.job_metadata import Job
from integrations.framework.json_patch import diff
from integrations.framework.multikueue_copy import never_suspended, remote_copy, whole_status_sync
from integrations.framework.pod_set_info import infos_from_admission
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.ray import cluster_templates, webhook_scope
from integrations.ray import ray_fields as fields
from integrations.ray.cluster_pod_sets import cluster_pod_sets
from integrations.ray.cluster_validation import validate_cluster_spec

FRAMEWORK_NAME: Final = "ray.io/raycluster"
READY: Final = "ready"
_AUTOSCALING_DETAIL: Final = (
    "a kueue-managed RayCluster can use autoscaling only as an elastic job"
    f" (upstream: the ElasticJobsViaWorkloadSlices gate and the {ELASTIC_JOB_ANNOTATION}"
    " annotation), and fleetq does not support elastic jobs: set it to false"
)


def _suspended(job: Job) -> bool:
    return job_metadata.suspend_field(job)


def cluster_spec(job: Job) -> Mapping[str, Any]:
    return job_metadata.spec(job)


def _own_rules(job: Job, ctx: WebhookContext) -> list[FieldError]:
    if not webhook_scope.queued(job, ctx):
        return []
    return validate_cluster_spec(
        cluster_spec(job), FieldPath("spec"), autoscaling_detail=_AUTOSCALING_DETAIL
    )


class RayClusterKind:
    """The RayCluster (upstream's `ray.io/raycluster` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource(fields.RAY_GROUP, fields.RAY_VERSION, "rayclusters", "RayCluster")
    own_controller_name = fields.KUBERAY_CONTROLLER_NAME
    pod_name_labels = (fields.RAY_CLUSTER_LABEL,)
    child_kinds: tuple[tuple[str, str], ...] = ()

    def is_suspended(self, job: Job) -> bool:
        return _suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return job_metadata.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return cluster_pod_sets(cluster_spec(job), job_metadata.annotations_of(job))

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        infos = {info.name: info for info in infos_from_admission(workload, flavors)}
        cluster_templates.check_names(cluster_spec(job), infos)
        started: dict[str, Any] = copy.deepcopy(dict(job))
        spec = started.setdefault("spec", {})
        cluster_templates.start_cluster(spec, infos)
        spec["suspend"] = False
        return started

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        stopped: dict[str, Any] = copy.deepcopy(dict(job))
        spec = stopped.setdefault("spec", {})
        spec["suspend"] = True
        if workload is not None and len(workload.spec.pod_sets) == (
            fields.expected_pod_set_count(spec)
        ):
            recorded = {ps.name: ps.template for ps in workload.spec.pod_sets}
            cluster_templates.restore_cluster(spec, recorded)
        patch = diff(job, stopped)
        return [JobWrite(JobSubresource.MAIN, patch, stopped)] if patch else []

    def finished(self, job: Job) -> JobFinish | None:
        return None  # a RayCluster runs until it is deleted

    def is_active(self, job: Job) -> bool:
        return fields.cluster_state(job) == READY

    def pods_ready(self, job: Job) -> bool:
        return fields.cluster_state(job) == READY

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(job, ctx, own_controller_name=self.own_controller_name)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return _own_rules(job, ctx) + job_validation.validate_on_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        if not webhook_scope.validates_update(old, new, ctx):
            return []
        common = job_validation.validate_update_common(old, new, ctx, _suspended)
        return common + _own_rules(new, ctx)

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return remote_copy(local, workload_name=workload_name, origin=origin)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        # Upstream's Ray adapter copies the status whatever the local suspend says.
        return whole_status_sync(local, remote, is_suspended=never_suspended)


RAYCLUSTER: Final = RayClusterKind()
