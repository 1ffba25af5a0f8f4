"""A job kind's AdmissionReview in, AdmissionReview out: the same plumbing for every kind.

The mutating webhook answers a CREATE with the JSON patch from the job to `kind.default`
(an UPDATE too for a `DefaultsOnUpdate` kind, nothing for other operations, as upstream
registers defaulting for CREATE only but for those kinds); the
validating webhook answers CREATE with `kind.validate_create` and UPDATE with
`kind.validate_update`, plus every kind's elastic-job annotation rules. (The server
denies a review about an object of another kind before it gets here.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.validation.field_errors import FieldError
from integrations.framework.admission_review import (
    Operation,
    admission_response,
    parse_request,
)
from integrations.framework.elastic_job_validation import (
    validate_elastic_create,
    validate_elastic_update,
)
from integrations.framework.job_capabilities import defaults_on_update
from integrations.framework.job_kind import JobKind
from integrations.framework.json_patch import JsonPatchOp, diff
from integrations.framework.webhook_context import WebhookContext

Review = Mapping[str, Any]


def mutation_patch(
    kind: JobKind, operation: Operation, job: Mapping[str, Any], ctx: WebhookContext
) -> list[JsonPatchOp]:
    """The JSON Patch the mutating webhook answers with (empty when nothing changes)."""
    if operation is Operation.CREATE or (
        operation is Operation.UPDATE and defaults_on_update(kind)
    ):
        return diff(job, kind.default(job, ctx))
    return []


def validate(
    kind: JobKind,
    operation: Operation,
    job: Mapping[str, Any],
    old_job: Mapping[str, Any] | None,
    ctx: WebhookContext,
) -> list[FieldError]:
    """The validating webhook's decision for one request: the kind's rules, then the
    elastic-job annotation's (`elastic_job_validation`)."""
    if operation is Operation.CREATE:
        return [*kind.validate_create(job, ctx), *validate_elastic_create(kind, job, ctx)]
    if operation is Operation.UPDATE and old_job is not None:
        return [
            *kind.validate_update(old_job, job, ctx),
            *validate_elastic_update(old_job, job, ctx),
        ]
    return []


def mutate_review(kind: JobKind, review: Review, ctx: WebhookContext) -> dict[str, Any]:
    """Answer a mutating AdmissionReview for a job of `kind`."""
    request = parse_request(review)
    if request.object is None:
        return admission_response(review)
    patch = mutation_patch(kind, request.operation, request.object, ctx)
    return admission_response(review, patch=patch)


def validate_review(kind: JobKind, review: Review, ctx: WebhookContext) -> dict[str, Any]:
    """Answer a validating AdmissionReview for a job of `kind`."""
    request = parse_request(review)
    if request.object is None:
        return admission_response(review)
    errors = validate(kind, request.operation, request.object, request.old_object, ctx)
    return admission_response(review, errors=errors)
