"""The Workload a job of any kind is queued as, built the way upstream Kueue builds it.

The kind gives its pod sets (`JobKind.pod_sets`); the rest is the same for every kind.
The Workload is named after the job's kind, name and UID (`<kind>-<name>-<hash>`), owned
by the job (controller reference, so it is garbage collected with it), carries the
resource-in-use finalizer, the queue name and priority (a WorkloadPriorityClass label
wins over the pods' PriorityClass), the max-exec-time limit and the job's UID as a
label. Of the job's labels only the configured `labelKeysToCopy` are copied; of its
annotations only ProvisioningRequest parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.api.meta import ObjectMeta, OwnerReference
from core.api.validation.labels import label_value_problem
from core.api.workload import PodSet, Workload, WorkloadSpec
from integrations.framework import job_metadata
from integrations.framework.job_kind import JobKind, SupportsPodPriorityClass
from integrations.framework.job_metadata import Job
from integrations.framework.labels import (
    JOB_UID_LABEL,
    PROVISIONING_REQUEST_ANNOTATION_PREFIX,
    RESOURCE_IN_USE_FINALIZER,
)
from integrations.framework.priority import PriorityClasses, resolve_priority
from integrations.framework.workload_names import (
    SHORT_MAX_WORKLOAD_NAME_LENGTH,
    workload_name_for_owner,
)

__all__ = [
    "WorkloadBuildOptions",
    "build_workload",
    "owner_reference",
    "rebuilt_spec",
    "workload_name",
]


@dataclass(frozen=True, slots=True)
class WorkloadBuildOptions:
    """Manager settings that shape every Workload built from a job."""

    label_keys_to_copy: tuple[str, ...] = ()
    """Configuration `labelKeysToCopy`: job labels copied onto its Workload."""
    max_name_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH
    """63 keeps the name usable as a label value; 253 is upstream's default mode."""


def workload_name(
    kind: JobKind, job: Job, *, max_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH
) -> str:
    """`<kind>-<name>-<hash>`: the same for the same job, different for a recreated one."""
    meta = job_metadata.metadata(job)
    return workload_name_for_owner(
        owner_name=str(meta.get("name", "")),
        owner_uid=str(meta.get("uid", "")),
        owner_kind=kind.resource.kind,
        owner_group=kind.resource.group,
        max_length=max_length,
    )


def owner_reference(kind: JobKind, job: Job) -> OwnerReference:
    """The controller reference a job's Workload carries."""
    meta = job_metadata.metadata(job)
    return OwnerReference(
        api_version=kind.resource.api_version,
        kind=kind.resource.kind,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        controller=True,
        block_owner_deletion=True,
    )


def _copied_labels(job: Job, keys: Iterable[str]) -> dict[str, str]:
    labels = job_metadata.labels_of(job)
    copied = {key: str(labels[key]) for key in keys if key in labels}
    uid = str(job_metadata.metadata(job).get("uid", ""))
    # A UID that is not a valid label value is simply not recorded, as upstream does.
    if uid and label_value_problem(uid) is None:
        copied[JOB_UID_LABEL] = uid
    return copied


def _copied_annotations(job: Job) -> dict[str, str]:
    return {
        key: str(value)
        for key, value in job_metadata.annotations_of(job).items()
        if key.startswith(PROVISIONING_REQUEST_ANNOTATION_PREFIX)
    }


def _pod_priority_class_name(pod_sets: Iterable[PodSet]) -> str:
    for pod_set in pod_sets:
        spec = pod_set.template.get("spec")
        name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        if name:
            return str(name)
    return ""


def build_workload(
    kind: JobKind,
    job: Job,
    priority_classes: PriorityClasses,
    options: WorkloadBuildOptions | None = None,
) -> Workload:
    """The Workload to create for `job`.

    Raises `MissingPriorityClass` when the job names a class that does not exist and
    `InvalidTopologyRequest` when a topology annotation cannot be read; the reconciler
    retries later (and may report an event), it never creates a half-right Workload.
    """
    options = options or WorkloadBuildOptions()
    meta = job_metadata.metadata(job)
    pod_sets = kind.pod_sets(job)
    priority = resolve_priority(
        workload_class_name=job_metadata.workload_priority_class_name(job),
        pod_class_name=(
            kind.pod_priority_class_name(job)
            if isinstance(kind, SupportsPodPriorityClass)
            else _pod_priority_class_name(pod_sets)
        ),
        classes=priority_classes,
    )
    return Workload(
        metadata=ObjectMeta(
            name=workload_name(kind, job, max_length=options.max_name_length),
            namespace=str(meta.get("namespace", "")),
            labels=_copied_labels(job, options.label_keys_to_copy),
            annotations=_copied_annotations(job),
            finalizers=[RESOURCE_IN_USE_FINALIZER],
            owner_references=[owner_reference(kind, job)],
        ),
        spec=WorkloadSpec(
            pod_sets=pod_sets,
            queue_name=job_metadata.queue_name(job),
            priority_class_ref=priority.class_ref,
            priority=priority.priority,
            maximum_execution_time_seconds=job_metadata.maximum_execution_time_seconds(job),
        ),
    )


def rebuilt_spec(
    kind: JobKind, job: Job, existing: Workload, priority_classes: PriorityClasses
) -> WorkloadSpec:
    """The spec a suspended job's not-yet-reserved Workload is updated to after an edit.

    Upstream updates such a Workload in place instead of recreating it; `active` is kept,
    since a user may have deactivated the Workload on purpose.
    """
    spec = build_workload(kind, job, priority_classes).spec
    spec.active = existing.spec.active
    return spec
