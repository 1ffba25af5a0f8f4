"""The validation every queued kind gets, upstream's jobframework rules.

Every version of a job must carry valid object names in its queue-name and
prebuilt-workload labels and a positive max-exec-time; an update may not change the
queue, the prebuilt Workload or the time limit of a running job, nor add a
WorkloadPriorityClass to a running job or remove one. A kind adds its own rules (a Job's
partial admission, a JobSet's replicated jobs) and passes how it reads "suspended".
Messages follow the apiserver's shape: `path: Invalid value: "value": detail`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from core.api.markers import DNS1123_SUBDOMAIN
from core.api.validation.field_errors import FieldError, FieldPath, invalid
from integrations.framework import job_metadata
from integrations.framework.job_metadata import Job
from integrations.framework.labels import (
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext

Suspended = Callable[[Job], bool]
"""How a kind reads "suspended" (with its own stop-in-progress rules)."""

LABELS_PATH: Final = FieldPath("metadata").child("labels")
ANNOTATIONS_PATH: Final = FieldPath("metadata").child("annotations")
QUEUE_NAME_PATH: Final = LABELS_PATH.key(QUEUE_NAME_LABEL)
IMMUTABLE: Final = "field is immutable"
IMMUTABLE_WHILE_RUNNING: Final = "cannot be changed while the job is running (not suspended)"
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN)


def shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def invalid_value(path: FieldPath, value: Any, detail: str) -> FieldError:
    # The apiserver's shape: `path: Invalid value: "value": detail`.
    return invalid(path, f"{shown(value)}: {detail}")


def object_name_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _SUBDOMAIN.match(value):
        return (
            "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.',"
            " starting and ending with a letter or digit (e.g. 'team-a')"
        )
    return None


def validate_object_name_label(job: Job, label: str) -> list[FieldError]:
    value = job_metadata.labels_of(job).get(label)
    if value is None:
        return []
    problem = object_name_problem(str(value))
    return [invalid_value(LABELS_PATH.key(label), value, problem)] if problem else []


def validate_max_exec_time(job: Job) -> list[FieldError]:
    text = job_metadata.labels_of(job).get(MAX_EXEC_TIME_SECONDS_LABEL)
    if text is None:
        return []
    path = LABELS_PATH.key(MAX_EXEC_TIME_SECONDS_LABEL)
    value = job_metadata.parse_int(text)
    if value is None:
        return [invalid_value(path, text, "must be a whole number of seconds")]
    if value <= 0:
        return [invalid_value(path, value, "must be greater than 0")]
    return []


def validate_on_create(job: Job) -> list[FieldError]:
    """The rules every version of a job must satisfy (upstream's ValidateJobOnCreate)."""
    return [
        *validate_object_name_label(job, QUEUE_NAME_LABEL),
        *validate_object_name_label(job, PREBUILT_WORKLOAD_LABEL),
        *validate_max_exec_time(job),
    ]


def immutable(path: FieldPath, new: Any, old: Any, detail: str = IMMUTABLE) -> list[FieldError]:
    return [] if new == old else [invalid_value(path, new, detail)]


def validate_queue_update(
    old: Job, new: Job, ctx: WebhookContext, is_suspended: Suspended
) -> list[FieldError]:
    errors: list[FieldError] = []
    old_queue, new_queue = job_metadata.queue_name(old), job_metadata.queue_name(new)
    if not is_suspended(new):
        errors += immutable(QUEUE_NAME_PATH, new_queue, old_queue, IMMUTABLE_WHILE_RUNNING)
    if not new_queue and old_queue and ctx.default_local_queue_exists:
        errors.append(
            invalid_value(
                QUEUE_NAME_PATH,
                "",
                "must not be removed in a namespace with a default LocalQueue",
            )
        )
    return errors


def validate_prebuilt_update(old: Job, new: Job, is_suspended: Suspended) -> list[FieldError]:
    if is_suspended(new):
        return validate_object_name_label(new, PREBUILT_WORKLOAD_LABEL)
    return immutable(
        LABELS_PATH.key(PREBUILT_WORKLOAD_LABEL),
        job_metadata.prebuilt_workload_name(new) or "",
        job_metadata.prebuilt_workload_name(old) or "",
        IMMUTABLE_WHILE_RUNNING,
    )


def validate_max_exec_time_update(old: Job, new: Job, is_suspended: Suspended) -> list[FieldError]:
    if is_suspended(old) and is_suspended(new):
        return []
    return immutable(
        LABELS_PATH.key(MAX_EXEC_TIME_SECONDS_LABEL),
        job_metadata.labels_of(new).get(MAX_EXEC_TIME_SECONDS_LABEL, ""),
        job_metadata.labels_of(old).get(MAX_EXEC_TIME_SECONDS_LABEL, ""),
        IMMUTABLE_WHILE_RUNNING,
    )


def validate_priority_class_update(old: Job, new: Job, is_suspended: Suspended) -> list[FieldError]:
    old_class = job_metadata.workload_priority_class_name(old)
    new_class = job_metadata.workload_priority_class_name(new)
    path = LABELS_PATH.key(PRIORITY_CLASS_LABEL)
    if not is_suspended(new) and not old_class and new_class:
        return [
            invalid_value(
                path, new_class, "a WorkloadPriorityClass cannot be added to a running job"
            )
        ]
    if old_class and not new_class:
        return [
            invalid_value(path, new_class, "a WorkloadPriorityClass cannot be removed from a job")
        ]
    return []


def validate_update_common(
    old: Job, new: Job, ctx: WebhookContext, is_suspended: Suspended
) -> list[FieldError]:
    """Every shared rule for an update (upstream's ValidateJobOnUpdate)."""
    return [
        *validate_on_create(new),
        *validate_queue_update(old, new, ctx, is_suspended),
        *validate_prebuilt_update(old, new, is_suspended),
        *validate_max_exec_time_update(old, new, is_suspended),
        *validate_priority_class_update(old, new, is_suspended),
    ]
