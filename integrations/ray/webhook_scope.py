"""When upstream's Ray webhooks apply their rules (shared by RayJob, RayCluster, RayService).

The kind's own rules (autoscaling, reserved names, a RayJob's cluster) apply on create to
a job Kueue will manage: one with a queue name, or any job under
`manageJobsWithoutQueueName`. An update is validated only then, or when the old version had
a queue name (upstream's ValidateRayAndSparkJobUpdates gate, on by default: removing the
label cannot leave a job running unmanaged); otherwise it is not validated at all.
"""

from __future__ import annotations

from integrations.framework import job_metadata
from integrations.framework.job_metadata import Job
from integrations.framework.webhook_context import WebhookContext


def queued(job: Job, ctx: WebhookContext) -> bool:
    return ctx.manage_jobs_without_queue_name or bool(job_metadata.queue_name(job))


def validates_update(old: Job, new: Job, ctx: WebhookContext) -> bool:
    return queued(new, ctx) or bool(job_metadata.queue_name(old))
