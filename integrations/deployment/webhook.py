"""The Deployment webhooks' decisions, upstream's deployment webhook rules: those of every
kind that queues its Pods (`framework.pod_owner_webhook`), the pod-suspending-parent
annotation being `deployment`. A Deployment whose LocalQueue leads to MultiKueue is refused:
MultiKueue does not dispatch Deployments (upstream v0.19.2 has no adapter for them)."""

from __future__ import annotations

from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.framework import job_metadata
from integrations.framework.job_metadata import Job
from integrations.framework.multikueue_refusal import refuse_multikueue_queue
from integrations.framework.pod_owner_webhook import (
    default_pod_owner,
    validate_pod_owner_create,
    validate_pod_owner_update,
)
from integrations.framework.webhook_context import WebhookContext

FRAMEWORK_NAME: Final = "deployment"
NOT_DISPATCHED: Final = "Deployments"


def default_deployment(deployment: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The Deployment as the defaulting webhook leaves it on create (a new dict)."""
    result, _ = default_pod_owner(deployment, ctx, FRAMEWORK_NAME)
    return result


def validate_create(deployment: Job, ctx: WebhookContext) -> list[FieldError]:
    return [
        *validate_pod_owner_create(deployment),
        *refuse_multikueue_queue(deployment, ctx, NOT_DISPATCHED),
    ]


def validate_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    errors = validate_pod_owner_update(old, new)
    if job_metadata.queue_name(new) != job_metadata.queue_name(old):
        errors += refuse_multikueue_queue(new, ctx, NOT_DISPATCHED)
    return errors
