"""The Deployment as a webhook-only kind (see the package docstring): never queued itself
(its Pods are), never dispatched by MultiKueue; only its webhook answers are its own."""

from __future__ import annotations

from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.deployment import webhook
from integrations.framework.job_kind import JobResource
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.webhook_only_kind import WebhookOnlyKind


class DeploymentKind(WebhookOnlyKind):
    """The Deployment (upstream's `deployment` framework)."""

    framework = webhook.FRAMEWORK_NAME
    resource = JobResource("apps", "v1", "deployments", "Deployment")
    implied_frameworks: tuple[str, ...] = ("pod",)

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_deployment(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job, ctx)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new, ctx)


DEPLOYMENT: Final = DeploymentKind()
