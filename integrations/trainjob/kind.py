"""TrainJob as a `JobKind`: the seam's answers for a Kubeflow Trainer v2.0 TrainJob.

A TrainJob's pods come from the (Cluster)TrainingRuntime it names, and its child Job
counts from the JobSet Trainer creates for it, so the kind reads both
(`ReadsReferencedObjects`): the registry holds `TRAINJOB`, unbound; the manager binds it
to its caches (`bound`). Unbound, what needs the runtime raises
`MissingReferencedObject` and the JobSet is taken as absent. Its start is two writes
(`StartsInSteps`, see `admission`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import default_job
from integrations.framework.job_kind import (
    JobFinish,
    JobKind,
    JobResource,
    JobWrite,
    StatusSync,
)
from integrations.framework.job_metadata import Job, metadata
from integrations.framework.multikueue_copy import never_suspended, remote_copy, whole_status_sync
from integrations.framework.referenced_objects import MissingReferencedObject, ObjectLookup
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_matching import admitted_pod_sets
from integrations.trainjob import admission, status
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.pod_sets import trainjob_pod_sets
from integrations.trainjob.runtime_jobset import ReplicatedJob, replicated_jobs

FRAMEWORK_NAME: Final = "trainer.kubeflow.org/trainjob"


@dataclass(frozen=True, slots=True)
class TrainJobKind:
    """The TrainJob (upstream's `trainer.kubeflow.org/trainjob` framework)."""

    lookup: ObjectLookup | None = None
    """Where runtimes and child JobSets are read from (None: unbound)."""

    framework: str = FRAMEWORK_NAME
    resource: JobResource = fields.TRAINJOBS
    own_controller_name: str = fields.TRAINJOB_CONTROLLER_NAME
    pod_name_labels: tuple[str, ...] = (fields.JOBSET_NAME_LABEL,)
    child_kinds: tuple[tuple[str, str], ...] = ((fields.JOBSETS.group, fields.JOBSETS.kind),)
    referenced_resources: tuple[JobResource, ...] = (
        fields.CLUSTER_TRAINING_RUNTIMES,
        fields.TRAINING_RUNTIMES,
        fields.JOBSETS,
    )

    def bound(self, lookup: ObjectLookup) -> JobKind:
        return TrainJobKind(lookup=lookup)

    # -- referenced objects ----------------------------------------------------------------
    def _runtime_spec(self, job: Job) -> Mapping[str, Any]:
        ref = fields.runtime_ref(job)
        meta = metadata(job)
        where = f"TrainJob {meta.get('namespace', '')}/{meta.get('name', '')}"
        if ref.api_group != fields.TRAINER_GROUP or ref.kind not in (
            fields.CLUSTER_TRAINING_RUNTIMES.kind,
            fields.TRAINING_RUNTIMES.kind,
        ):
            raise MissingReferencedObject(
                f"{where}: runtimeRef {ref.api_group}/{ref.kind} is not a TrainingRuntime "
                "or ClusterTrainingRuntime of trainer.kubeflow.org"
            )
        resource = (
            fields.CLUSTER_TRAINING_RUNTIMES if ref.cluster_scoped else fields.TRAINING_RUNTIMES
        )
        namespace = "" if ref.cluster_scoped else str(meta.get("namespace", ""))
        runtime = None if self.lookup is None else self.lookup.get(resource, namespace, ref.name)
        if runtime is None:
            raise MissingReferencedObject(
                f'{where}: {ref.kind} "{ref.name}" not found; create it (the TrainJob is '
                "queued once it exists)"
            )
        return job_metadata.spec(runtime)

    def _replicated(self, job: Job) -> list[ReplicatedJob]:
        return replicated_jobs(job, self._runtime_spec(job))

    def _child_counts(self, job: Job) -> status.ChildCounts:
        jobset = None
        if self.lookup is not None:
            meta = metadata(job)
            found = self.lookup.get(
                fields.JOBSETS, str(meta.get("namespace", "")), str(meta.get("name", ""))
            )
            owner = None if found is None else job_metadata.controller_owner(found)
            if owner is not None and owner.get("uid") == meta.get("uid"):
                jobset = found
        return status.child_counts(job, jobset)

    # -- reading ---------------------------------------------------------------------------
    def is_suspended(self, job: Job) -> bool:
        return job_metadata.suspend_field(job)

    def managed_by(self, job: Job) -> str | None:
        return job_metadata.managed_by(job)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return trainjob_pod_sets(self._replicated(job))

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        return admitted_pod_sets(workload, flavors)

    # -- running ---------------------------------------------------------------------------
    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        return admission.start_trainjob(job, self._replicated(job), workload, flavors)

    def plan_start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[JobWrite]:
        return admission.plan_start(job, self._replicated(job), workload, flavors)

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        return admission.plan_stop(job, active=self.is_active(job))

    def finished(self, job: Job) -> JobFinish | None:
        return status.trainjob_finished(job)

    def is_active(self, job: Job) -> bool:
        return status.is_active(self._child_counts(job))

    def pods_ready(self, job: Job) -> bool:
        try:
            replicated = self._replicated(job)
        except MissingReferencedObject:
            return False
        return status.pods_ready(replicated, self._child_counts(job))

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        counts = self._child_counts(job)
        if not counts:
            return []
        return status.reclaimable_pods(self._replicated(job), counts)

    # -- webhook ---------------------------------------------------------------------------
    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return default_job(job, ctx, own_controller_name=self.own_controller_name)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_on_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return job_validation.validate_update_common(old, new, ctx, self.is_suspended)

    # -- MultiKueue ------------------------------------------------------------------------
    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        # The worker's Kueue adds overrides for its own admission: only the user's go.
        user = fields.user_overrides(local)
        remote = remote_copy(local, workload_name=workload_name, origin=origin)
        if user:
            remote["spec"]["podSpecOverrides"] = [dict(o) for o in user]
        else:
            remote["spec"].pop("podSpecOverrides", None)
        annotations = remote["metadata"].get("annotations")
        if annotations is not None:
            annotations.pop(fields.FIRST_KUEUE_OVERRIDE_ANNOTATION, None)
            if not annotations:
                del remote["metadata"]["annotations"]
        return remote

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        # Upstream copies a TrainJob's status whatever the local suspend says.
        return whole_status_sync(local, remote, is_suspended=never_suspended)


TRAINJOB: Final = TrainJobKind()
