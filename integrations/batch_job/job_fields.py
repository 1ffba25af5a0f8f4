"""Reading a batch/v1 Job kept as a plain dict (its JSON shape), with Kubernetes' defaults.

Jobs are not typed: fleetq reads a handful of fields and must pass every other one on
untouched, so a Job stays the dict the apiserver sent. These readers apply the same
defaults the apiserver would (parallelism 1, completions unset) so that callers never
branch on a missing key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.labels import (
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    JOB_STOPPING_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)

Job = Mapping[str, Any]
"""A batch/v1 Job as parsed JSON."""

JOB_API_VERSION: Final = "batch/v1"
JOB_KIND: Final = "Job"
JOB_GROUP: Final = "batch"
INDEXED_COMPLETION: Final = "Indexed"
_INT32_MAX: Final = 2**31 - 1


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def metadata(job: Job) -> Mapping[str, Any]:
    return _section(job, "metadata")


def spec(job: Job) -> Mapping[str, Any]:
    return _section(job, "spec")


def status(job: Job) -> Mapping[str, Any]:
    return _section(job, "status")


def labels_of(job: Job) -> Mapping[str, str]:
    return _section(metadata(job), "labels")


def annotations_of(job: Job) -> Mapping[str, str]:
    return _section(metadata(job), "annotations")


def template(job: Job) -> Mapping[str, Any]:
    return _section(spec(job), "template")


def queue_name(job: Job) -> str:
    """The LocalQueue the job is submitted to ('' when none)."""
    return str(labels_of(job).get(QUEUE_NAME_LABEL, ""))


def workload_priority_class_name(job: Job) -> str:
    return str(labels_of(job).get(PRIORITY_CLASS_LABEL, ""))


def prebuilt_workload_name(job: Job) -> str | None:
    """The Workload the job must run under, when it is told so by label."""
    value = labels_of(job).get(PREBUILT_WORKLOAD_LABEL)
    return None if value is None else str(value)


def maximum_execution_time_seconds(job: Job) -> int | None:
    """The max-exec-time label as a positive int32; anything else counts as unset."""
    value = parse_int(labels_of(job).get(MAX_EXEC_TIME_SECONDS_LABEL))
    return value if value is not None and 0 < value <= _INT32_MAX else None


def parse_int(text: Any) -> int | None:
    """A base-10 integer as Go's strconv.Atoi reads it (optional sign, digits only)."""
    if not isinstance(text, str):
        return None
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits.isascii() or not digits.isdigit():
        return None
    return int(text)


def parse_bool(text: Any) -> bool | None:
    """A boolean as Go's strconv.ParseBool reads it; None when it is not one."""
    if not isinstance(text, str):
        return None
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def parallelism(job: Job) -> int:
    """spec.parallelism; the apiserver defaults it to 1."""
    value = _int(spec(job).get("parallelism"))
    return 1 if value is None else value


def completions(job: Job) -> int | None:
    return _int(spec(job).get("completions"))


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


def suspend_field(job: Job) -> bool:
    """spec.suspend as written."""
    return spec(job).get("suspend") is True


def is_suspended(job: Job) -> bool:
    """Suspended and not in the middle of a Kueue stop (see JOB_STOPPING_ANNOTATION)."""
    return suspend_field(job) and annotations_of(job).get(JOB_STOPPING_ANNOTATION) != "true"


def managed_by(job: Job) -> str | None:
    value = spec(job).get("managedBy")
    return value if isinstance(value, str) else None


def controller_owner(job: Job) -> Mapping[str, Any] | None:
    """The ownerReference with controller=true, if any."""
    for owner in metadata(job).get("ownerReferences") or ():
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            return owner
    return None


def status_int(job: Job, field: str) -> int:
    return _int(status(job).get(field)) or 0
