"""batch/v1 Job as a `JobKind`: the seam's answers for a Job, from this package's modules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.batch_job import admission, job_fields, multikueue_adapter, status, webhook
from integrations.batch_job.job_fields import Job
from integrations.batch_job.pod_sets import job_pod_sets
from integrations.framework.job_kind import JobFinish, JobResource, JobWrite, StatusSync
from integrations.framework.labels import (
    BATCH_JOB_CONTROLLER_NAME,
    BATCH_JOB_NAME_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets

FRAMEWORK_NAME: Final = "batch/job"


class BatchJobKind:
    """The batch/v1 Job (upstream's `batch/job` framework)."""

    framework = FRAMEWORK_NAME
    resource = JobResource(job_fields.JOB_GROUP, "v1", "jobs", job_fields.JOB_KIND)
    own_controller_name = BATCH_JOB_CONTROLLER_NAME
    pod_name_labels = (BATCH_JOB_NAME_LABEL, LEGACY_JOB_NAME_LABEL)
    child_kinds: tuple[tuple[str, str], ...] = ()
    resizes_in_slices = True
    """An elastic Job's parallelism may change while admitted (`framework.job_capabilities`
    ResizesInSlices): its running pods stay, only the count the Workload holds changes."""

    def is_suspended(self, job: Job) -> bool:
        return job_fields.is_suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return job_fields.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return job_pod_sets(job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return admission.start_job(job, workload, flavors)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return admission.plan_stop(job, workload)

    def finished(self, job: Job) -> JobFinish | None:
        return status.job_finished(job)

    def is_active(self, job: Job) -> bool:
        return status.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        return status.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return status.reclaimable_pods(job)

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_job(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job, ctx)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new, ctx)

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return multikueue_adapter.remote_job(local, workload_name=workload_name, origin=origin)

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        return multikueue_adapter.remote_status_sync(local, remote)


BATCH_JOB: Final = BatchJobKind()
