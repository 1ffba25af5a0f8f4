"""ray.io/v1 RayJob <-> Workload: the `ray.io/rayjob` kind.

A RayJob is queued as one Workload: its RayCluster spec's pod sets (head, worker groups)
and, in K8sJobMode, the submitter last (`rayjob_submitter`). Start unsuspends it
(`spec.suspend: false`) with every template pointed at its flavors (the submitter's too;
a RayJob without `submitterPodTemplate` gets KubeRay's default one, pointed at the flavor);
stop suspends it and restores the templates in one write, and KubeRay deletes the cluster.

- Finished once KubeRay's `jobDeploymentStatus` is Complete or Failed; it succeeded when
  `jobStatus` is SUCCEEDED; the message is `status.message`.
- Active unless `jobDeploymentStatus` is New (empty) or Suspended; pods ready when the
  cluster's state (`status.rayClusterStatus.state`) is ready.
- A RayJob on an existing cluster (`spec.clusterSelector`) is left alone (`skip`).
- The RayCluster KubeRay creates for it is never queued on its own (`child_kinds`).
- Its pods are found by `ray.io/cluster=<status.rayClusterName>` (`pod_label_selector`).
- Webhook (a queued RayJob): no clusterSelector together with a rayClusterSpec, one of
  them required, `shutdownAfterJobFinishes: true` (else the finished job's cluster would
  keep holding quota), and the cluster rules (`cluster_validation`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError, FieldPath, required
from core.api.workload import PodSet, ReclaimablePod, Workload
from core.api.workload_conditions import WorkloadReason
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
from integrations.framework.pod_set_info import (
    infos_from_admission,
    merge_into_template,
    restore_template,
)
from integrations.framework.topology_request import topology_request_from_template
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.ray import cluster_templates, rayjob_submitter, webhook_scope
from integrations.ray import ray_fields as fields
from integrations.ray.cluster_pod_sets import cluster_pod_sets
from integrations.ray.cluster_validation import validate_cluster_spec
from integrations.ray.rayjob_submitter import SUBMITTER_POD_SET

FRAMEWORK_NAME: Final = "ray.io/rayjob"
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
SUCCEEDED: Final = "SUCCEEDED"
_AUTOSCALING_DETAIL: Final = (
    "a kueue managed job should only use autoscaling when workload slicing is enabled,"
    " and fleetq does not support workload slicing: set it to false"
)
_SPEC: Final = FieldPath("spec")


def _suspended(job: Job) -> bool:
    return job_metadata.suspend_field(job)


def _status(job: Job) -> Mapping[str, Any]:
    return job_metadata.status(job)


def _extra_pod_sets(job: Job) -> list[str]:
    return [SUBMITTER_POD_SET] if rayjob_submitter.has_submitter_pod_set(job) else []


def rayjob_pod_sets(job: Job) -> list[PodSet]:
    """The cluster's pod sets, the sidecar submitter on the head, the submitter pod set."""
    cluster = fields.nested_cluster_spec(job)
    pod_sets = cluster_pod_sets(cluster, job_metadata.annotations_of(job))
    if rayjob_submitter.submission_mode(job) == rayjob_submitter.SIDECAR_MODE:
        head = pod_sets[0].template.setdefault("spec", {})
        head["containers"] = [*(head.get("containers") or []), rayjob_submitter.sidecar_container()]
    if rayjob_submitter.has_submitter_pod_set(job):
        template = rayjob_submitter.submitter_template(job)
        pod_sets.append(
            PodSet(
                name=SUBMITTER_POD_SET,
                template=template,
                count=1,
                topology_request=topology_request_from_template(template),
            )
        )
    return pod_sets


def _own_rules(job: Job, ctx: WebhookContext) -> tuple[list[FieldError], bool]:
    """The RayJob's rules, and whether the shared create rules still apply (upstream
    returns early, without them, for the clusterSelector cases)."""
    if not webhook_scope.queued(job, ctx):
        return [], True
    spec = job_metadata.spec(job)
    selector = spec.get("clusterSelector")
    has_selector = isinstance(selector, Mapping) and bool(selector)
    has_cluster = isinstance(spec.get("rayClusterSpec"), Mapping)
    if has_selector and has_cluster:
        detail = "a kueue managed job should not use an existing cluster"
        return [
            job_validation.invalid_value(_SPEC.child("clusterSelector"), selector, detail)
        ], False
    if has_selector:
        return [], False
    if not has_cluster:
        detail = "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
        return [required(_SPEC.child("rayClusterSpec"), detail)], False
    errors: list[FieldError] = []
    if spec.get("shutdownAfterJobFinishes") is not True:
        errors.append(
            job_validation.invalid_value(
                _SPEC.child("shutdownAfterJobFinishes"),
                bool(spec.get("shutdownAfterJobFinishes")),
                "a kueue managed job should delete the cluster after finishing",
            )
        )
    errors += validate_cluster_spec(
        fields.nested_cluster_spec(job),
        _SPEC.child("rayClusterSpec"),
        autoscaling_detail=_AUTOSCALING_DETAIL,
    )
    return errors, True


class RayJobKind:
    """The RayJob (upstream's `ray.io/rayjob` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource(fields.RAY_GROUP, fields.RAY_VERSION, "rayjobs", "RayJob")
    own_controller_name = fields.KUBERAY_CONTROLLER_NAME
    pod_name_labels = (fields.RAY_CLUSTER_LABEL,)
    """Fallback only: a RayJob's pods are named by its cluster's name (`pod_label_selector`)."""
    child_kinds: tuple[tuple[str, str], ...] = ((fields.RAY_GROUP, "RayCluster"),)

    def is_suspended(self, job: Job) -> bool:
        return _suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return job_metadata.managed_by(job)

    def skip(self, job: Job) -> bool:
        selector = job_metadata.spec(job).get("clusterSelector")
        return isinstance(selector, Mapping) and bool(selector)

    def pod_label_selector(self, job: Job) -> str | None:
        name = _status(job).get("rayClusterName")
        return f"{fields.RAY_CLUSTER_LABEL}={name}" if name else None

    def pod_sets(self, job: Job) -> list[PodSet]:
        return rayjob_pod_sets(job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        infos = {info.name: info for info in infos_from_admission(workload, flavors)}
        extra = _extra_pod_sets(job)
        cluster_templates.check_names(fields.nested_cluster_spec(job), infos, extra)
        started: dict[str, Any] = copy.deepcopy(dict(job))
        spec = started.setdefault("spec", {})
        cluster_templates.start_cluster(spec.setdefault("rayClusterSpec", {}), infos)
        if extra:
            template = rayjob_submitter.submitter_template(job)
            spec["submitterPodTemplate"] = merge_into_template(template, infos[SUBMITTER_POD_SET])
        spec["suspend"] = False
        return started

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        stopped: dict[str, Any] = copy.deepcopy(dict(job))
        spec = stopped.setdefault("spec", {})
        spec["suspend"] = True
        cluster = spec.get("rayClusterSpec")
        expected = fields.expected_pod_set_count(fields.nested_cluster_spec(job)) + len(
            _extra_pod_sets(job)
        )
        if (
            workload is not None
            and isinstance(cluster, dict)
            and len(workload.spec.pod_sets) == expected
        ):
            recorded = {ps.name: ps.template for ps in workload.spec.pod_sets}
            cluster_templates.restore_cluster(cluster, recorded)
            submitter = spec.get("submitterPodTemplate")
            if isinstance(submitter, dict) and SUBMITTER_POD_SET in recorded:
                spec["submitterPodTemplate"] = restore_template(
                    submitter, recorded[SUBMITTER_POD_SET]
                )
        patch = diff(job, stopped)
        return [JobWrite(JobSubresource.MAIN, patch, stopped)] if patch else []

    def finished(self, job: Job) -> JobFinish | None:
        status = _status(job)
        if status.get("jobDeploymentStatus") not in (COMPLETE, FAILED):
            return None
        succeeded = status.get("jobStatus") == SUCCEEDED
        reason = WorkloadReason.SUCCEEDED if succeeded else WorkloadReason.FAILED
        return JobFinish(reason=reason, message=str(status.get("message") or ""))

    def is_active(self, job: Job) -> bool:
        return str(_status(job).get("jobDeploymentStatus") or "") not in ("", SUSPENDED)

    def pods_ready(self, job: Job) -> bool:
        cluster_status = section(_status(job), "rayClusterStatus")
        return cluster_status.get("state") == "ready"

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(job, ctx, own_controller_name=self.own_controller_name)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        errors, shared = _own_rules(job, ctx)
        return errors + (job_validation.validate_on_create(job) if shared else [])

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        if not webhook_scope.validates_update(old, new, ctx):
            return []
        common = job_validation.validate_update_common(old, new, ctx, _suspended)
        return common + _own_rules(new, ctx)[0]

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return remote_copy(local, workload_name=workload_name, origin=origin)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        # Upstream's Ray adapter copies the status whatever the local suspend says.
        return whole_status_sync(local, remote, is_suspended=never_suspended)


RAYJOB: Final = RayJobKind()
