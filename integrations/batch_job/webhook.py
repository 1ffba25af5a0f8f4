"""The batch/v1 Job admission webhooks: the shared rules plus the Job's own.

Defaulting is the framework's (`framework.job_defaulting`: default queue, suspend,
managedBy for MultiKueue) with the Job's own suspend reader (a Job half-way through a
Kueue stop does not count as suspended). Validation adds to the shared rules
(`framework.job_validation`) what would make a Job's Workload wrong or unstable:
partial-admission settings that cannot work (also together with the elastic-job
annotation, whose resizes partial admission would fight), and changes to parallelism
while it runs — unless the Job is elastic (workload slices, `framework.workload_slicing`):
then parallelism may change at any time.
"""

from __future__ import annotations

from typing import Any

from core.api.validation.field_errors import FieldError, FieldPath, forbidden
from core.api.workload_slices import elastic
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.framework import job_validation as shared
from integrations.framework.job_defaulting import default_job as default_any_job
from integrations.framework.job_validation import (
    ANNOTATIONS_PATH,
    IMMUTABLE_WHILE_RUNNING,
    invalid_value,
)
from integrations.framework.labels import (
    BATCH_JOB_CONTROLLER_NAME,
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
)
from integrations.framework.webhook_context import WebhookContext

__all__ = ["default_job", "validate_create", "validate_update"]

_MIN_PARALLELISM_PATH = ANNOTATIONS_PATH.key(JOB_MIN_PARALLELISM_ANNOTATION)
_SYNC_COMPLETIONS_PATH = ANNOTATIONS_PATH.key(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)


def default_job(job: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The Job as the defaulting webhook leaves it on create."""
    return default_any_job(
        job,
        ctx,
        own_controller_name=BATCH_JOB_CONTROLLER_NAME,
        is_suspended=job_fields.is_suspended,
    )


# --- validation -----------------------------------------------------------------------


def _validate_min_parallelism(job: Job, ctx: WebhookContext | None) -> list[FieldError]:
    text = job_fields.annotations_of(job).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if text is None:
        return []
    if ctx is not None and ctx.elastic_jobs and elastic(job):
        detail = "partial admission and elastic job cannot be used together"
        return [invalid_value(_MIN_PARALLELISM_PATH, text, detail)]
    value = job_fields.parse_int(text)
    if value is None:
        return [invalid_value(_MIN_PARALLELISM_PATH, text, "must be a whole number of pods")]
    count = job_fields.pods_count(job)
    if not 0 < value < count:
        if count <= 1:
            detail = (
                "partial admission needs a Job that runs at least 2 pods at once"
                " (parallelism and completions of 2 or more)"
            )
        else:
            detail = (
                f"must be between 1 and {count - 1}: the Job runs {count} pods at once,"
                " and the minimum must be smaller than that"
            )
        return [invalid_value(_MIN_PARALLELISM_PATH, value, detail)]
    return []


def _spec_int(job: Job, name: str) -> int:
    value = job_fields.spec(job).get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _validate_completions_follow_parallelism(job: Job) -> list[FieldError]:
    text = job_fields.annotations_of(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    if text is None:
        return []
    enabled = job_fields.parse_bool(text)
    if enabled is None:
        return [invalid_value(_SYNC_COMPLETIONS_PATH, text, 'must be "true" or "false"')]
    errors: list[FieldError] = []
    if enabled:
        if not job_fields.is_indexed(job):
            errors.append(
                invalid_value(_SYNC_COMPLETIONS_PATH, text, "may only be enabled for Indexed Jobs")
            )
        if _spec_int(job, "parallelism") != _spec_int(job, "completions"):
            completions = job_fields.spec(job).get("completions")
            errors.append(
                invalid_value(
                    FieldPath("spec").child("completions"),
                    "null" if completions is None else completions,
                    f"must equal parallelism when {JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}"
                    " is true",
                )
            )
    return errors


def validate_create(job: Job, ctx: WebhookContext | None = None) -> list[FieldError]:
    """Errors that reject creating `job` (empty when it is fine)."""
    return [
        *shared.validate_on_create(job),
        *_validate_min_parallelism(job, ctx),
        *_validate_completions_follow_parallelism(job),
    ]


def _validate_partial_admission_update(old: Job, new: Job) -> list[FieldError]:
    errors: list[FieldError] = []
    if (
        JOB_MIN_PARALLELISM_ANNOTATION in job_fields.annotations_of(old)
        and not job_fields.suspend_field(old)
        and _spec_int(old, "parallelism") != _spec_int(new, "parallelism")
    ):
        errors.append(
            forbidden(
                FieldPath("spec").child("parallelism"),
                "cannot change while partial admission is enabled and the job is not suspended",
            )
        )
    if (
        not job_fields.is_suspended(old)
        and not job_fields.is_suspended(new)
        and job_fields.completions_follow_parallelism(old)
        != job_fields.completions_follow_parallelism(new)
    ):
        errors.append(forbidden(_SYNC_COMPLETIONS_PATH, f"{IMMUTABLE_WHILE_RUNNING}"))
    return errors


def validate_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    """Errors that reject changing `old` into `new` (empty when it is fine)."""
    suspended = job_fields.is_suspended
    errors = shared.validate_on_create(new)
    min_key = JOB_MIN_PARALLELISM_ANNOTATION
    if job_fields.annotations_of(new).get(min_key) != job_fields.annotations_of(old).get(min_key):
        errors += _validate_min_parallelism(new, ctx)
    errors += _validate_completions_follow_parallelism(new)
    errors += shared.validate_queue_update(old, new, ctx, suspended)
    errors += shared.validate_prebuilt_update(old, new, suspended)
    errors += shared.validate_max_exec_time_update(old, new, suspended)
    errors += shared.validate_priority_class_update(old, new, suspended)
    errors += _validate_partial_admission_update(old, new)
    return errors
