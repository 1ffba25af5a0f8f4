"""JobSet as a `JobKind`: the seam's answers for a JobSet, from this package's modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import JobFinish, JobResource, JobWrite, StatusSync
from integrations.framework.job_metadata import Job
from integrations.framework.multikueue_copy import never_suspended, remote_copy, whole_status_sync
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.jobset import admission, status
from integrations.jobset import jobset_fields as fields
from integrations.jobset.pod_sets import jobset_pod_sets

FRAMEWORK_NAME: Final = "jobset.x-k8s.io/jobset"


class JobSetKind:
    """The JobSet (upstream's `jobset.x-k8s.io/jobset` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource(
        fields.JOBSET_GROUP, fields.JOBSET_VERSION, "jobsets", fields.JOBSET_KIND
    )
    own_controller_name = fields.JOBSET_CONTROLLER_NAME
    pod_name_labels = (fields.JOBSET_NAME_LABEL,)
    child_kinds: tuple[tuple[str, str], ...] = (("batch", "Job"),)

    def is_suspended(self, job: Job) -> bool:
        return admission.is_suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return job_metadata.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return jobset_pod_sets(job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return admission.start_jobset(job, workload, flavors)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return admission.plan_stop(job, workload)

    def finished(self, job: Job) -> JobFinish | None:
        return status.jobset_finished(job)

    def is_active(self, job: Job) -> bool:
        return status.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        return status.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return status.reclaimable_pods(job)

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(job, ctx, own_controller_name=self.own_controller_name)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_on_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_update_common(old, new, ctx, self.is_suspended)

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return remote_copy(local, workload_name=workload_name, origin=origin)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        # Upstream copies a JobSet's status whatever the local suspend says.
        return whole_status_sync(local, remote, is_suspended=never_suspended)


JOBSET: Final = JobSetKind()
