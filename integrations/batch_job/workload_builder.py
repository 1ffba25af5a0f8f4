"""The Workload a batch/v1 Job is queued as, built the way upstream Kueue builds it.

One pod set named `main` holds the Job's pod template and runs `min(parallelism,
completions)` pods; the min-parallelism annotation becomes its minCount (partial
admission). The Workload is owned by the Job (controller reference, so it is garbage
collected with it), carries the resource-in-use finalizer, the queue name and priority,
and the Job's UID as a label. Of the Job's labels only the configured `labelKeysToCopy`
are copied; of its annotations only ProvisioningRequest parameters.

Succeeded pods do not shrink the count: the count must stay stable for the Workload to
keep matching its Job, and the quota of finished pods is released through
`status.reclaimablePods` instead (see `status.reclaimable_pods`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.api.meta import ObjectMeta, OwnerReference
from core.api.validation.labels import label_value_problem
from core.api.workload import DEFAULT_POD_SET_NAME, PodSet, Workload, WorkloadSpec
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import JOB_API_VERSION, JOB_GROUP, JOB_KIND, Job
from integrations.env_deduplication import fold_duplicate_env
from integrations.labels import (
    BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
    BATCH_JOB_MANAGED_POD_LABELS,
    BATCH_JOB_NAME_LABEL,
    JOB_UID_LABEL,
    PROVISIONING_REQUEST_ANNOTATION_PREFIX,
    RESOURCE_IN_USE_FINALIZER,
)
from integrations.priority import PriorityClasses, resolve_priority
from integrations.topology_request import topology_request_from_template
from integrations.workload_names import SHORT_MAX_WORKLOAD_NAME_LENGTH, workload_name_for_owner

__all__ = [
    "WorkloadBuildOptions",
    "build_workload",
    "job_owner_reference",
    "job_pod_sets",
    "pod_template_for_workload",
    "rebuilt_spec",
    "workload_name_for_job",
]

# The Job controller's own pod labels (UIDs) say nothing about what the pods need; only
# the job-name label is kept, as upstream keeps it.
_DROPPED_POD_LABELS = tuple(
    label for label in BATCH_JOB_MANAGED_POD_LABELS if label != BATCH_JOB_NAME_LABEL
)


@dataclass(frozen=True, slots=True)
class WorkloadBuildOptions:
    """Manager settings that shape every Workload built from a Job."""

    label_keys_to_copy: tuple[str, ...] = ()
    """Configuration `labelKeysToCopy`: Job labels copied onto its Workload."""
    max_name_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH
    """63 keeps the name usable as a label value; 253 is upstream's default mode."""


def workload_name_for_job(job: Job, *, max_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH) -> str:
    """`job-<name>-<hash>`: the same for the same Job, different for a recreated one."""
    meta = job_fields.metadata(job)
    return workload_name_for_owner(
        owner_name=str(meta.get("name", "")),
        owner_uid=str(meta.get("uid", "")),
        owner_kind=JOB_KIND,
        owner_group=JOB_GROUP,
        max_length=max_length,
    )


def pod_template_for_workload(job: Job) -> dict[str, Any]:
    """The Job's pod template as the Workload stores it: without UID labels, env folded."""
    template = fold_duplicate_env(job_fields.template(job))
    meta = template.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("labels"), dict):
        for label in _DROPPED_POD_LABELS:
            meta["labels"].pop(label, None)
    return template


def job_pod_sets(job: Job) -> list[PodSet]:
    """The single `main` pod set of a Job, as it is now."""
    template = pod_template_for_workload(job)
    return [
        PodSet(
            name=DEFAULT_POD_SET_NAME,
            template=template,
            count=job_fields.pods_count(job),
            min_count=job_fields.min_pods_count(job),
            topology_request=topology_request_from_template(
                template, pod_index_label=BATCH_JOB_COMPLETION_INDEX_ANNOTATION
            ),
        )
    ]


def job_owner_reference(job: Job) -> OwnerReference:
    """The controller reference a Job's Workload carries."""
    meta = job_fields.metadata(job)
    return OwnerReference(
        api_version=JOB_API_VERSION,
        kind=JOB_KIND,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        controller=True,
        block_owner_deletion=True,
    )


def _copied_labels(job: Job, keys: Iterable[str]) -> dict[str, str]:
    labels = job_fields.labels_of(job)
    copied = {key: str(labels[key]) for key in keys if key in labels}
    uid = str(job_fields.metadata(job).get("uid", ""))
    # A UID that is not a valid label value is simply not recorded, as upstream does.
    if uid and label_value_problem(uid) is None:
        copied[JOB_UID_LABEL] = uid
    return copied


def _copied_annotations(job: Job) -> dict[str, str]:
    return {
        key: str(value)
        for key, value in job_fields.annotations_of(job).items()
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
    job: Job,
    priority_classes: PriorityClasses,
    options: WorkloadBuildOptions | None = None,
) -> Workload:
    """The Workload to create for `job`.

    Raises `MissingPriorityClass` when the Job names a class that does not exist and
    `InvalidTopologyRequest` when a topology annotation cannot be read; the reconciler
    retries later (and may report an event), it never creates a half-right Workload.
    """
    options = options or WorkloadBuildOptions()
    meta = job_fields.metadata(job)
    pod_sets = job_pod_sets(job)
    priority = resolve_priority(
        workload_class_name=job_fields.workload_priority_class_name(job),
        pod_class_name=_pod_priority_class_name(pod_sets),
        classes=priority_classes,
    )
    return Workload(
        metadata=ObjectMeta(
            name=workload_name_for_job(job, max_length=options.max_name_length),
            namespace=str(meta.get("namespace", "")),
            labels=_copied_labels(job, options.label_keys_to_copy),
            annotations=_copied_annotations(job),
            finalizers=[RESOURCE_IN_USE_FINALIZER],
            owner_references=[job_owner_reference(job)],
        ),
        spec=WorkloadSpec(
            pod_sets=pod_sets,
            queue_name=job_fields.queue_name(job),
            priority_class_ref=priority.class_ref,
            priority=priority.priority,
            maximum_execution_time_seconds=job_fields.maximum_execution_time_seconds(job),
        ),
    )


def rebuilt_spec(job: Job, existing: Workload, priority_classes: PriorityClasses) -> WorkloadSpec:
    """The spec a suspended Job's not-yet-reserved Workload is updated to after a Job edit.

    Upstream updates such a Workload in place instead of recreating it; `active` is kept,
    since a user may have deactivated the Workload on purpose.
    """
    spec = build_workload(job, priority_classes).spec
    spec.active = existing.spec.active
    return spec
