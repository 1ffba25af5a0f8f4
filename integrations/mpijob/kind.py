"""MPIJob as a `JobKind` (upstream's `pkg/controller/jobs/mpijob`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework import job_validation
from integrations.framework import replica_spec_jobs as replica_jobs
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import JobFinish, JobResource, JobWrite, StatusSync
from integrations.framework.job_metadata import Job
from integrations.framework.multikueue_copy import remote_copy, whole_status_sync
from integrations.framework.replica_spec_jobs import ReplicaSpecShape
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets

FRAMEWORK_NAME: Final = "kubeflow.org/mpijob"
MPIJOB_GROUP: Final = "kubeflow.org"
MPIJOB_VERSION: Final = "v2beta1"
MPIJOB_KIND: Final = "MPIJob"
MPI_OPERATOR_CONTROLLER_NAME: Final = "kubeflow.org/mpi-operator"
"""The runPolicy.managedBy value meaning "the MPI Operator" (same as unset)."""
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
"""Label the MPI Operator puts on the launcher and worker pods, valued with the job name."""
SHAPE: Final = ReplicaSpecShape(
    replica_specs_field="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    replica_index_label="training.kubeflow.org/replica-index",
)


def _never_suspended(_: Job) -> bool:
    return False


class MPIJobKind:
    """The MPI Operator's v2beta1 MPIJob."""

    framework = FRAMEWORK_NAME
    resource = JobResource(MPIJOB_GROUP, MPIJOB_VERSION, "mpijobs", MPIJOB_KIND)
    own_controller_name = MPI_OPERATOR_CONTROLLER_NAME
    pod_name_labels = (JOB_NAME_LABEL,)
    child_kinds: tuple[tuple[str, str], ...] = (("batch", "Job"),)
    """The launcher's Job."""

    def is_suspended(self, job: Job) -> bool:
        return replica_jobs.is_suspended(job)

    def managed_by(self, job: Job) -> str | None:
        return replica_jobs.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return replica_jobs.pod_sets(SHAPE, job)

    def pod_priority_class_name(self, job: Job) -> str:
        return replica_jobs.priority_class_name(SHAPE, job)

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return replica_jobs.start(SHAPE, job, workload, flavors, MPIJOB_KIND)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return replica_jobs.plan_stop(SHAPE, job, workload)

    def finished(self, job: Job) -> JobFinish | None:
        return replica_jobs.finished(job)

    def is_active(self, job: Job) -> bool:
        return replica_jobs.is_active(job)

    def pods_ready(self, job: Job) -> bool:
        return replica_jobs.pods_ready(job)

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        return []  # upstream's MPIJob reclaims nothing before it finishes

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
        # Upstream copies an MPIJob's status whatever the local suspend says.
        return whole_status_sync(
            local, remote, is_suspended=_never_suspended, managed_by=replica_jobs.managed_by
        )


MPIJOB: Final = MPIJobKind()
