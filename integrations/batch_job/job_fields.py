"""Reading a batch/v1 Job kept as a plain dict (its JSON shape), with Kubernetes' defaults.

The readers every kind shares come from `framework.job_metadata`; these are the Job's
own, applying the defaults the apiserver would (parallelism 1, completions unset) so that
callers never branch on a missing key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import (
    Job,
    annotations_of,
    controller_owner,
    int_value,
    labels_of,
    managed_by,
    maximum_execution_time_seconds,
    metadata,
    parse_bool,
    parse_int,
    prebuilt_workload_name,
    queue_name,
    section,
    spec,
    status,
    suspend_field,
    workload_priority_class_name,
)
from integrations.framework.labels import (
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    JOB_STOPPING_ANNOTATION,
)

__all__ = [  # the shared readers, re-exported so Job code reads one module
    "Job",
    "annotations_of",
    "controller_owner",
    "int_value",
    "labels_of",
    "managed_by",
    "maximum_execution_time_seconds",
    "metadata",
    "parse_bool",
    "parse_int",
    "prebuilt_workload_name",
    "queue_name",
    "section",
    "spec",
    "status",
    "suspend_field",
    "workload_priority_class_name",
]

JOB_API_VERSION: Final = "batch/v1"
JOB_KIND: Final = "Job"
JOB_GROUP: Final = "batch"
INDEXED_COMPLETION: Final = "Indexed"


def template(job: Job) -> Mapping[str, Any]:
    return section(spec(job), "template")


def parallelism(job: Job) -> int:
    """spec.parallelism; the apiserver defaults it to 1."""
    value = int_value(spec(job).get("parallelism"))
    return 1 if value is None else value


def completions(job: Job) -> int | None:
    return int_value(spec(job).get("completions"))


def pods_count(job: Job) -> int:
    """Pods the Job runs at once: parallelism, but never more than completions."""
    count = parallelism(job)
    wanted = completions(job)
    return wanted if wanted is not None and wanted < count else count


def min_pods_count(job: Job) -> int | None:
    """The min-parallelism annotation (partial admission), when it is an integer."""
    return parse_int(annotations_of(job).get(JOB_MIN_PARALLELISM_ANNOTATION))


def completions_follow_parallelism(job: Job) -> bool:
    """Whether partial admission also scales completions (Indexed Jobs only)."""
    return parse_bool(annotations_of(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)) is True


def is_indexed(job: Job) -> bool:
    return spec(job).get("completionMode") == INDEXED_COMPLETION


def is_suspended(job: Job) -> bool:
    """Suspended and not in the middle of a Kueue stop (see JOB_STOPPING_ANNOTATION)."""
    return suspend_field(job) and annotations_of(job).get(JOB_STOPPING_ANNOTATION) != "true"


def status_int(job: Job, field: str) -> int:
    return int_value(status(job).get(field)) or 0
