"""The Deployment webhooks' decisions, upstream's deployment webhook rules: those of every
kind that queues its Pods (`framework.pod_owner_webhook`), the pod-suspending-parent
annotation being `deployment`. A Deployment whose LocalQueue leads to MultiKueue is
accepted, as upstream v0.19.2 accepts it: the Deployment stays on the manager and each of
its Pods is dispatched on its own through the Pod adapter (integrations.pod)."""

from __future__ import annotations

from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.framework.job_metadata import Job
from integrations.framework.pod_owner_webhook import (
    default_pod_owner,
    validate_pod_owner_create,
    validate_pod_owner_update,
)
from integrations.framework.webhook_context import WebhookContext

FRAMEWORK_NAME: Final = "deployment"


def default_deployment(deployment: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The Deployment as the defaulting webhook leaves it on create (a new dict)."""
    result, _ = default_pod_owner(deployment, ctx, FRAMEWORK_NAME)
    return result


def validate_create(deployment: Job, ctx: WebhookContext) -> list[FieldError]:
    return validate_pod_owner_create(deployment)


def validate_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    return validate_pod_owner_update(old, new)
