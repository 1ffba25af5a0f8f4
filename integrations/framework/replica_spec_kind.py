"""A `JobKind` for any job of the replica-spec shape (`replica_spec_jobs`).

The training operator's v1 jobs and the MPI Operator's MPIJob differ only in names: their
group/version/kind, the field holding their replica specs and its order, the managedBy
value of their own operator, the pod label naming the job and what they create. One class
answers for all of them; a kind's package makes its instance.
"""

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
from integrations.framework.multikueue_copy import never_suspended, remote_copy, whole_status_sync
from integrations.framework.replica_spec_jobs import ReplicaSpecShape
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets


class ReplicaSpecJobKind:
    """A kind whose jobs keep replica specs and a runPolicy (upstream's `KubeflowJob`,
    `MPIJob`)."""

    def __init__(
        self,
        *,
        framework: str,
        resource: JobResource,
        shape: ReplicaSpecShape,
        own_controller_name: str,
        pod_name_labels: tuple[str, ...],
        child_kinds: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.framework = framework
        self.resource = resource
        self.shape = shape
        self.own_controller_name = own_controller_name
        self.pod_name_labels = pod_name_labels
        self.child_kinds = child_kinds

    def __repr__(self) -> str:
        return f"ReplicaSpecJobKind({self.resource.kind})"

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
        return replica_jobs.start(self.shape, job, workload, flavors, self.resource.kind)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return replica_jobs.plan_stop(self.shape, job, workload)

    def finished(self, job: Job) -> JobFinish | None:
        return replica_jobs.finished(job)

    def is_active(self, job: Job) -> bool:
        return replica_jobs.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        return replica_jobs.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []  # upstream reclaims nothing of these jobs before they finish

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
        # Upstream copies these jobs' status whatever the local suspend says.
        return whole_status_sync(
            local, remote, is_suspended=never_suspended, managed_by=replica_jobs.managed_by
        )
