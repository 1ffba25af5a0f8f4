"""The pod set a batch/v1 Job is queued as, as upstream builds it.

One pod set named `main` holds the Job's pod template and runs `min(parallelism,
completions)` pods; the min-parallelism annotation becomes its minCount (partial
admission). Succeeded pods do not shrink the count: the count must stay stable for the
Workload to keep matching its Job, and the quota of finished pods is released through
`status.reclaimablePods` instead (see `status.reclaimable_pods`).
"""

from __future__ import annotations

from typing import Any

from core.api.workload import DEFAULT_POD_SET_NAME, PodSet
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.labels import (
    BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
    BATCH_JOB_MANAGED_POD_LABELS,
    BATCH_JOB_NAME_LABEL,
)
from integrations.framework.topology_request import topology_request_from_template

# The Job controller's own pod labels (UIDs) say nothing about what the pods need; only
# the job-name label is kept, as upstream keeps it.
_DROPPED_POD_LABELS = tuple(
    label for label in BATCH_JOB_MANAGED_POD_LABELS if label != BATCH_JOB_NAME_LABEL
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
