"""Reading any job kept as a plain dict: the labels, annotations and fields every kind shares.

Jobs are not typed: fleetq reads a handful of fields and must pass every other one on
untouched, so a job stays the dict the apiserver sent. The label names are upstream's
(`framework.labels`); `spec.managedBy` and `spec.suspend` are where every Job-like kind
keeps them (a kind that keeps them elsewhere reads its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.labels import (
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)

Job = Mapping[str, Any]
"""A job of any kind as parsed JSON."""

_INT32_MAX: Final = 2**31 - 1


def int_value(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def metadata(job: Job) -> Mapping[str, Any]:
    return section(job, "metadata")


def spec(job: Job) -> Mapping[str, Any]:
    return section(job, "spec")


def status(job: Job) -> Mapping[str, Any]:
    return section(job, "status")


def labels_of(job: Job) -> Mapping[str, str]:
    return section(metadata(job), "labels")


def annotations_of(job: Job) -> Mapping[str, str]:
    return section(metadata(job), "annotations")


def queue_name(job: Job) -> str:
    """The LocalQueue the job is submitted to ('' when none)."""
    return str(labels_of(job).get(QUEUE_NAME_LABEL, ""))


def workload_priority_class_name(job: Job) -> str:
    return str(labels_of(job).get(PRIORITY_CLASS_LABEL, ""))


def prebuilt_workload_name(job: Job) -> str | None:
    """The Workload the job must run under, when it is told so: by annotation (upstream
    v0.19's manager writes that) or else by label (v0.17's, and fleetq's hub)."""
    value = annotations_of(job).get(PREBUILT_WORKLOAD_ANNOTATION) or labels_of(job).get(
        PREBUILT_WORKLOAD_LABEL
    )
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


def managed_by(job: Job) -> str | None:
    value = spec(job).get("managedBy")
    return value if isinstance(value, str) else None


def controller_owner(job: Job) -> Mapping[str, Any] | None:
    """The ownerReference with controller=true, if any."""
    for owner in metadata(job).get("ownerReferences") or ():
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            return owner
    return None


def suspend_field(job: Job) -> bool:
    """spec.suspend as written."""
    return spec(job).get("suspend") is True
