"""Any Kubeflow v1 job as a `JobKind`: one class, one instance per kind (see `jobs/`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework import job_validation
from integrations.framework import replica_spec_jobs as replica_jobs
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import JobFinish, JobResource, JobWrite, StatusSync
from integrations.framework.job_metadata import Job
from integrations.framework.multikueue_copy import remote_copy, whole_status_sync
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.kubeflow.definition import (
    JOB_NAME_LABEL,
    KUBEFLOW_CONTROLLER_NAME,
    KUBEFLOW_GROUP,
    KUBEFLOW_VERSION,
    KubeflowJobDefinition,
)


def _never_suspended(_: Job) -> bool:
    return False


class KubeflowJobKind:
    """A kubeflow.org/v1 job kind of the training operator (upstream's `KubeflowJob`)."""

    own_controller_name = KUBEFLOW_CONTROLLER_NAME
    pod_name_labels = (JOB_NAME_LABEL,)
    child_kinds: tuple[tuple[str, str], ...] = ()
    """The operator creates pods and Services itself: nothing it makes is queued."""

    def __init__(self, definition: KubeflowJobDefinition) -> None:
        self.definition = definition
        self.shape = definition.shape
        self.framework = definition.framework
        self.resource = JobResource(
            KUBEFLOW_GROUP, KUBEFLOW_VERSION, definition.plural, definition.kind
        )

    def __repr__(self) -> str:
        return f"KubeflowJobKind({self.definition.kind})"

    def is_suspended(self, job: Job) -> bool:
        return replica_jobs.is_suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return replica_jobs.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return replica_jobs.pod_sets(self.shape, job)

    def pod_priority_class_name(self, job: Job) -> str:
        return replica_jobs.priority_class_name(self.shape, job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return replica_jobs.start(self.shape, job, workload, flavors, self.definition.kind)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return replica_jobs.plan_stop(self.shape, job, workload)

    def finished(self, job: Job) -> JobFinish | None:
        return replica_jobs.finished(job)

    def is_active(self, job: Job) -> bool:
        return replica_jobs.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        return replica_jobs.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []  # upstream's KubeflowJob reclaims nothing before it finishes

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(
            job,
            ctx,
            own_controller_name=self.own_controller_name,
            is_suspended=replica_jobs.is_suspended,
            suspend=replica_jobs.set_suspend,
            managed_by=replica_jobs.managed_by,
            set_managed_by=replica_jobs.set_managed_by,
        )

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_on_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_update_common(old, new, ctx, self.is_suspended)

    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        return remote_copy(
            local,
            workload_name=workload_name,
            origin=origin,
            clean_spec=replica_jobs.drop_managed_by,
        )

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        # Upstream copies a Kubeflow job's status whatever the local suspend says.
        return whole_status_sync(
            local, remote, is_suspended=_never_suspended, managed_by=replica_jobs.managed_by
        )
