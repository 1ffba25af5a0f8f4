"""ray.io/v1 RayService <-> Workload: the `ray.io/rayservice` kind (upstream since 0.19).

A RayService is a long-running Ray Serve deployment. It is queued as one Workload with
its `spec.rayClusterSpec`'s pod sets (head, worker groups; no submitter), suspended and
started through `spec.rayClusterSpec.suspend` (KubeRay copies it to the RayCluster it
makes), never finishes (it holds its quota until deleted or evicted), and is active and
ready while its `Ready` condition is True. A deleting RayService with GCS fault tolerance
is left alone (`skip`, upstream's DeferRayServiceFinalizationForRedisCleanup, on by
default) so KubeRay's Redis cleanup Job can finish first. Its RayClusters are never queued
on their own; its pods are found by `ray.io/cluster=<status.activeServiceStatus.rayClusterName>`.

MultiKueue: created on the worker, status copied back, removed with its Workload; a later
`serveConfigV2` edit on the manager is forwarded to the worker's copy (`remote_spec_patch`,
upstream's RemoteSpecSyncer under MultiKueueRemoteSpecSync, on by default in 0.19), which
KubeRay applies as an in-place Serve update. Nothing else of the spec is forwarded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError, FieldPath
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import (
    JobFinish,
    JobResource,
    JobSubresource,
    JobWrite,
    StatusSync,
)
from integrations.framework.job_metadata import Job, section
from integrations.framework.json_patch import diff
from integrations.framework.multikueue_copy import never_suspended, remote_copy, whole_status_sync
from integrations.framework.pod_set_info import infos_from_admission
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.ray import cluster_templates, webhook_scope
from integrations.ray import ray_fields as fields
from integrations.ray.cluster_pod_sets import cluster_pod_sets
from integrations.ray.cluster_validation import validate_cluster_spec

FRAMEWORK_NAME: Final = "ray.io/rayservice"
READY_CONDITION: Final = "Ready"
SERVE_CONFIG: Final = "serveConfigV2"
_AUTOSCALING_DETAIL: Final = (
    "a kueue managed job should only use autoscaling when workload slicing is enabled,"
    " and fleetq does not support workload slicing: set it to false"
)


def _suspended(job: Job) -> bool:
    return fields.nested_cluster_spec(job).get("suspend") is True


def _suspend(job: dict[str, Any]) -> None:
    job.setdefault("spec", {}).setdefault("rayClusterSpec", {})["suspend"] = True


def _ready(job: Job) -> bool:
    for condition in job_metadata.status(job).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == READY_CONDITION:
            return condition.get("status") == "True"
    return False


def _own_rules(job: Job, ctx: WebhookContext) -> list[FieldError]:
    if not webhook_scope.queued(job, ctx):
        return []
    return validate_cluster_spec(
        fields.nested_cluster_spec(job),
        FieldPath("spec").child("rayClusterSpec"),
        autoscaling_detail=_AUTOSCALING_DETAIL,
    )


class RayServiceKind:
    """The RayService (upstream's `ray.io/rayservice` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource(fields.RAY_GROUP, fields.RAY_VERSION, "rayservices", "RayService")
    own_controller_name = fields.KUBERAY_CONTROLLER_NAME
    pod_name_labels = (fields.RAY_CLUSTER_LABEL,)
    """Fallback only: its pods are named by its active cluster (`pod_label_selector`)."""
    child_kinds: tuple[tuple[str, str], ...] = ((fields.RAY_GROUP, "RayCluster"),)

    def is_suspended(self, job: Job) -> bool:
        return _suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return job_metadata.managed_by(job)

    def skip(self, job: Job) -> bool:
        deleting = bool(job_metadata.metadata(job).get("deletionTimestamp"))
        return deleting and fields.gcs_fault_tolerance(
            fields.nested_cluster_spec(job), job_metadata.annotations_of(job)
        )

    def pod_label_selector(self, job: Job) -> str | None:
        active = section(job_metadata.status(job), "activeServiceStatus")
        name = active.get("rayClusterName")
        return f"{fields.RAY_CLUSTER_LABEL}={name}" if name else None

    def pod_sets(self, job: Job) -> list[PodSet]:
        return cluster_pod_sets(fields.nested_cluster_spec(job), job_metadata.annotations_of(job))

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        infos = {info.name: info for info in infos_from_admission(workload, flavors)}
        cluster_templates.check_names(fields.nested_cluster_spec(job), infos)
        started: dict[str, Any] = copy.deepcopy(dict(job))
        cluster = started.setdefault("spec", {}).setdefault("rayClusterSpec", {})
        cluster_templates.start_cluster(cluster, infos)
        cluster["suspend"] = False
        return started

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        stopped: dict[str, Any] = copy.deepcopy(dict(job))
        _suspend(stopped)
        cluster = stopped["spec"]["rayClusterSpec"]
        if workload is not None and len(workload.spec.pod_sets) == (
            fields.expected_pod_set_count(cluster)
        ):
            recorded = {ps.name: ps.template for ps in workload.spec.pod_sets}
            cluster_templates.restore_cluster(cluster, recorded)
        patch = diff(job, stopped)
        return [JobWrite(JobSubresource.MAIN, patch, stopped)] if patch else []

    def finished(self, job: Job) -> JobFinish | None:
        return None  # a service runs until it is deleted

    def is_active(self, job: Job) -> bool:
        return _ready(job)

    def pods_ready(self, job: Job) -> bool:
        return _ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(
            job,
            ctx,
            own_controller_name=self.own_controller_name,
            is_suspended=_suspended,
            suspend=_suspend,
        )

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
        return whole_status_sync(local, remote, is_suspended=never_suspended)

    def remote_spec_patch(self, local: Job, remote: Job) -> dict[str, Any] | None:
        wanted = job_metadata.spec(local).get(SERVE_CONFIG)
        if job_metadata.spec(remote).get(SERVE_CONFIG) == wanted:
            return None
        return {"spec": {SERVE_CONFIG: wanted}}


RAYSERVICE: Final = RayServiceKind()
