"""The batch/v1 Job admission webhooks: defaulting on create, validation on create/update.

Defaulting (upstream registers it for CREATE only) does three things, in this order:
1. a Job without a queue-name gets `default` when a LocalQueue of that name exists in
   its namespace (unless its owner is a job kind Kueue queues as a whole);
2. a Job Kueue will manage is created suspended, so no pod starts before admission:
   one with a queue name, or any Job when `manageJobsWithoutQueueName` is on and the
   namespace matches `managedJobsNamespaceSelector`, unless an ancestor job is already
   managed by Kueue (the ancestor's Workload covers it);
3. a Job whose LocalQueue leads to a ClusterQueue with a MultiKueue admission check gets
   `spec.managedBy: kueue.x-k8s.io/multikueue`, so the manager's Job controller leaves
   it alone and only a worker runs it; a managedBy the user chose is kept.

Validation rejects what would make the Job's Workload wrong or unstable: names that are
not valid object names, partial-admission settings that cannot work, and changes to
queue, priority, limits or parallelism while the Job runs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.api.markers import DNS1123_SUBDOMAIN
from core.api.validation.field_errors import FieldError, FieldPath, forbidden, invalid
from integrations.admission_review import (
    AdmissionRequest,
    Operation,
    admission_response,
    parse_request,
)
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.json_patch import JsonPatchOp, diff
from integrations.labels import (
    BATCH_JOB_CONTROLLER_NAME,
    DEFAULT_LOCAL_QUEUE_NAME,
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    MULTIKUEUE_MANAGED_BY,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)

__all__ = [
    "JobWebhookContext",
    "default_job",
    "mutate",
    "mutation_patch",
    "validate",
    "validate_create",
    "validate_review",
    "validate_update",
]

_LABELS = FieldPath("metadata").child("labels")
_ANNOTATIONS = FieldPath("metadata").child("annotations")
_QUEUE_NAME_PATH = _LABELS.key(QUEUE_NAME_LABEL)
_MIN_PARALLELISM_PATH = _ANNOTATIONS.key(JOB_MIN_PARALLELISM_ANNOTATION)
_SYNC_COMPLETIONS_PATH = _ANNOTATIONS.key(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
_IMMUTABLE = "field is immutable"
_IMMUTABLE_WHILE_RUNNING = "cannot be changed while the job is running (not suspended)"
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN)


def _never(_: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class JobWebhookContext:
    """What the webhook needs to know about the cluster, looked up by the caller's cache."""

    default_local_queue_exists: bool = False
    """A LocalQueue named `default` exists in the Job's namespace."""
    leads_to_multikueue: Callable[[str], bool] = field(default=_never)
    """Given a LocalQueue name in the Job's namespace: does its ClusterQueue have an
    admission check whose controller is MultiKueue?"""
    manage_jobs_without_queue_name: bool = False
    """Configuration `manageJobsWithoutQueueName`."""
    namespace_selected: bool = True
    """`managedJobsNamespaceSelector` matches the Job's namespace (True without one)."""
    owner_is_managed_kind: bool = False
    """The Job's controller owner is a kind Kueue queues as a whole (e.g. a JobSet)."""
    ancestor_managed_by_kueue: bool = False
    """An ancestor job of this Job is itself managed by Kueue."""
    multikueue_enabled: bool = True
    """The MultiKueue feature is on (it is by default)."""


# --- defaulting -----------------------------------------------------------------------


def _should_suspend(job: Job, ctx: JobWebhookContext) -> bool:
    if ctx.ancestor_managed_by_kueue:
        return False
    if job_fields.queue_name(job):
        return True
    return ctx.manage_jobs_without_queue_name and ctx.namespace_selected


def default_job(job: Job, ctx: JobWebhookContext) -> dict[str, Any]:
    """The Job as the defaulting webhook leaves it on create."""
    result: dict[str, Any] = copy.deepcopy(dict(job))
    meta = result.setdefault("metadata", {})
    spec = result.setdefault("spec", {})

    if (
        ctx.default_local_queue_exists
        and not job_fields.queue_name(result)
        and not ctx.owner_is_managed_kind
    ):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}

    if _should_suspend(result, ctx) and not job_fields.is_suspended(result):
        spec["suspend"] = True

    managed_by = job_fields.managed_by(result)
    queue = job_fields.queue_name(result)
    if (
        ctx.multikueue_enabled
        and managed_by in (None, BATCH_JOB_CONTROLLER_NAME)
        and queue
        and ctx.leads_to_multikueue(queue)
    ):
        spec["managedBy"] = MULTIKUEUE_MANAGED_BY
    return result


def mutation_patch(operation: Operation, job: Job, ctx: JobWebhookContext) -> list[JsonPatchOp]:
    """The JSON Patch the mutating webhook answers with (empty when nothing changes)."""
    if operation is not Operation.CREATE:
        return []
    return diff(job, default_job(job, ctx))


# --- validation -----------------------------------------------------------------------


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _invalid(path: FieldPath, value: Any, detail: str) -> FieldError:
    # The apiserver's shape: `path: Invalid value: "value": detail`.
    return invalid(path, f"{_shown(value)}: {detail}")


def _object_name_problem(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _SUBDOMAIN.match(value):
        return (
            "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.',"
            " starting and ending with a letter or digit (e.g. 'team-a')"
        )
    return None


def _validate_object_name_label(job: Job, label: str) -> list[FieldError]:
    value = job_fields.labels_of(job).get(label)
    if value is None:
        return []
    problem = _object_name_problem(str(value))
    return [_invalid(_LABELS.key(label), value, problem)] if problem else []


def _validate_max_exec_time(job: Job) -> list[FieldError]:
    text = job_fields.labels_of(job).get(MAX_EXEC_TIME_SECONDS_LABEL)
    if text is None:
        return []
    path = _LABELS.key(MAX_EXEC_TIME_SECONDS_LABEL)
    value = job_fields.parse_int(text)
    if value is None:
        return [_invalid(path, text, "must be a whole number of seconds")]
    if value <= 0:
        return [_invalid(path, value, "must be greater than 0")]
    return []


def _validate_min_parallelism(job: Job) -> list[FieldError]:
    text = job_fields.annotations_of(job).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if text is None:
        return []
    value = job_fields.parse_int(text)
    if value is None:
        return [_invalid(_MIN_PARALLELISM_PATH, text, "must be a whole number of pods")]
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
        return [_invalid(_MIN_PARALLELISM_PATH, value, detail)]
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
        return [_invalid(_SYNC_COMPLETIONS_PATH, text, 'must be "true" or "false"')]
    errors: list[FieldError] = []
    if enabled:
        if not job_fields.is_indexed(job):
            errors.append(
                _invalid(_SYNC_COMPLETIONS_PATH, text, "may only be enabled for Indexed Jobs")
            )
        if _spec_int(job, "parallelism") != _spec_int(job, "completions"):
            completions = job_fields.spec(job).get("completions")
            errors.append(
                _invalid(
                    FieldPath("spec").child("completions"),
                    "null" if completions is None else completions,
                    f"must equal parallelism when {JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}"
                    " is true",
                )
            )
    return errors


def _validate_on_create(job: Job) -> list[FieldError]:
    """The rules every version of a Job must satisfy."""
    return [
        *_validate_object_name_label(job, QUEUE_NAME_LABEL),
        *_validate_object_name_label(job, PREBUILT_WORKLOAD_LABEL),
        *_validate_max_exec_time(job),
    ]


def validate_create(job: Job) -> list[FieldError]:
    """Errors that reject creating `job` (empty when it is fine)."""
    return [
        *_validate_on_create(job),
        *_validate_min_parallelism(job),
        *_validate_completions_follow_parallelism(job),
    ]


def _immutable(path: FieldPath, new: Any, old: Any, detail: str = _IMMUTABLE) -> list[FieldError]:
    return [] if new == old else [_invalid(path, new, detail)]


def _validate_queue_update(old: Job, new: Job, ctx: JobWebhookContext) -> list[FieldError]:
    errors: list[FieldError] = []
    old_queue, new_queue = job_fields.queue_name(old), job_fields.queue_name(new)
    if not job_fields.is_suspended(new):
        errors += _immutable(_QUEUE_NAME_PATH, new_queue, old_queue, _IMMUTABLE_WHILE_RUNNING)
    if not new_queue and old_queue and ctx.default_local_queue_exists:
        errors.append(
            _invalid(
                _QUEUE_NAME_PATH,
                "",
                "must not be removed in a namespace with a default LocalQueue",
            )
        )
    return errors


def _validate_prebuilt_update(old: Job, new: Job) -> list[FieldError]:
    if job_fields.is_suspended(new):
        return _validate_object_name_label(new, PREBUILT_WORKLOAD_LABEL)
    return _immutable(
        _LABELS.key(PREBUILT_WORKLOAD_LABEL),
        job_fields.prebuilt_workload_name(new) or "",
        job_fields.prebuilt_workload_name(old) or "",
        _IMMUTABLE_WHILE_RUNNING,
    )


def _validate_max_exec_time_update(old: Job, new: Job) -> list[FieldError]:
    if job_fields.is_suspended(old) and job_fields.is_suspended(new):
        return []
    return _immutable(
        _LABELS.key(MAX_EXEC_TIME_SECONDS_LABEL),
        job_fields.labels_of(new).get(MAX_EXEC_TIME_SECONDS_LABEL, ""),
        job_fields.labels_of(old).get(MAX_EXEC_TIME_SECONDS_LABEL, ""),
        _IMMUTABLE_WHILE_RUNNING,
    )


def _validate_priority_class_update(old: Job, new: Job) -> list[FieldError]:
    old_class = job_fields.workload_priority_class_name(old)
    new_class = job_fields.workload_priority_class_name(new)
    path = _LABELS.key(PRIORITY_CLASS_LABEL)
    if not job_fields.is_suspended(new) and not old_class and new_class:
        return [
            _invalid(path, new_class, "a WorkloadPriorityClass cannot be added to a running job")
        ]
    if old_class and not new_class:
        return [_invalid(path, new_class, "a WorkloadPriorityClass cannot be removed from a job")]
    return []


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
        errors.append(forbidden(_SYNC_COMPLETIONS_PATH, f"{_IMMUTABLE_WHILE_RUNNING}"))
    return errors


def validate_update(old: Job, new: Job, ctx: JobWebhookContext) -> list[FieldError]:
    """Errors that reject changing `old` into `new` (empty when it is fine)."""
    errors = _validate_on_create(new)
    min_key = JOB_MIN_PARALLELISM_ANNOTATION
    if job_fields.annotations_of(new).get(min_key) != job_fields.annotations_of(old).get(min_key):
        errors += _validate_min_parallelism(new)
    errors += _validate_completions_follow_parallelism(new)
    errors += _validate_queue_update(old, new, ctx)
    errors += _validate_prebuilt_update(old, new)
    errors += _validate_max_exec_time_update(old, new)
    errors += _validate_priority_class_update(old, new)
    errors += _validate_partial_admission_update(old, new)
    return errors


def validate(
    operation: Operation, job: Job, old_job: Job | None, ctx: JobWebhookContext
) -> list[FieldError]:
    """The validating webhook's decision for one request."""
    if operation is Operation.CREATE:
        return validate_create(job)
    if operation is Operation.UPDATE and old_job is not None:
        return validate_update(old_job, job, ctx)
    return []


# --- AdmissionReview in, AdmissionReview out ---------------------------------------------


def mutate(review: Mapping[str, Any], ctx: JobWebhookContext) -> dict[str, Any]:
    """Answer a mutating AdmissionReview for a Job (`parse_request` tells which context)."""
    request: AdmissionRequest = parse_request(review)
    if request.object is None:
        return admission_response(review)
    return admission_response(review, patch=mutation_patch(request.operation, request.object, ctx))


def validate_review(review: Mapping[str, Any], ctx: JobWebhookContext) -> dict[str, Any]:
    """Answer a validating AdmissionReview for a Job."""
    request = parse_request(review)
    if request.object is None:
        return admission_response(review)
    errors = validate(request.operation, request.object, request.old_object, ctx)
    return admission_response(review, errors=errors)
