"""Refusing a job whose LocalQueue leads to MultiKueue when its kind is never dispatched.

A kind without a MultiKueue adapter (a Deployment: upstream v0.19.2 has none) must not
be queued behind a MultiKueue admission check: nothing would ever run it, so the webhook
says so at once, naming the queue and what to do instead.
"""

from __future__ import annotations

from core.api.validation.field_errors import FieldError
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext


def refuse_multikueue_queue(job: Job, ctx: WebhookContext, what: str) -> list[FieldError]:
    """An error when `job`'s queue leads to MultiKueue; `what` names the kind ("Deployments")."""
    queue = job_metadata.queue_name(job)
    if not queue or not ctx.multikueue_enabled or not ctx.leads_to_multikueue(queue):
        return []
    return [
        job_validation.invalid_value(
            job_validation.QUEUE_NAME_PATH,
            queue,
            f"the LocalQueue leads to MultiKueue, which does not dispatch {what} (there is no "
            "MultiKueue adapter for Deployments, upstream neither); use a queue without "
            "MultiKueue",
        )
    ]
