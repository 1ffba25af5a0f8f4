"""The StatefulSet as a webhook-only kind (see the package docstring): never queued itself
(its Pods are, as one pod group); MultiKueue never dispatches it (upstream v0.19.2 has a
StatefulSet MultiKueue adapter; fleetq does not). Only its webhook answers are its own."""

from __future__ import annotations

from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.framework.job_kind import JobResource
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.webhook_only_kind import WebhookOnlyKind
from integrations.statefulset import webhook


class StatefulSetKind(WebhookOnlyKind):
    """The StatefulSet (upstream's `statefulset` framework)."""

    framework = webhook.FRAMEWORK_NAME
    resource = JobResource("apps", "v1", "statefulsets", "StatefulSet")
    implied_frameworks: tuple[str, ...] = ("pod",)

    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        return webhook.default_statefulset(job, ctx)

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_create(job)

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        return webhook.validate_update(old, new)


STATEFULSET: Final = StatefulSetKind()
