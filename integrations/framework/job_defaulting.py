"""The defaulting every queued kind gets on create, upstream's jobframework rules in order.

1. a job without a queue-name gets `default` when a LocalQueue of that name exists in its
   namespace (unless its owner is a job kind Kueue queues as a whole);
2. a job Kueue will manage is created suspended, so no pod starts before admission: one
   with a queue name, or any job when `manageJobsWithoutQueueName` is on and the
   namespace matches `managedJobsNamespaceSelector`, unless an ancestor job is already
   managed by Kueue (the ancestor's Workload covers it);
3. a job whose LocalQueue leads to a ClusterQueue with a MultiKueue admission check gets
   `spec.managedBy: kueue.x-k8s.io/multikueue`, so the manager's controller for the kind
   leaves it alone and only a worker runs it; a managedBy the user chose is kept.
A kind whose suspend or managedBy live elsewhere passes its own readers and writers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from integrations.framework import job_metadata
from integrations.framework.job_metadata import Job
from integrations.framework.labels import (
    DEFAULT_LOCAL_QUEUE_NAME,
    MULTIKUEUE_MANAGED_BY,
    QUEUE_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext


def should_suspend(job: Job, ctx: WebhookContext) -> bool:
    """Whether the job must be created suspended (rule 2)."""
    if ctx.ancestor_managed_by_kueue:
        return False
    if job_metadata.queue_name(job):
        return True
    return ctx.manage_jobs_without_queue_name and ctx.namespace_selected


def _set_suspend(job: dict[str, Any]) -> None:
    job.setdefault("spec", {})["suspend"] = True


def _set_managed_by(job: dict[str, Any], value: str) -> None:
    job.setdefault("spec", {})["managedBy"] = value


def default_job(
    job: Job,
    ctx: WebhookContext,
    *,
    own_controller_name: str,
    is_suspended: Callable[[Job], bool] = job_metadata.suspend_field,
    suspend: Callable[[dict[str, Any]], None] = _set_suspend,
    managed_by: Callable[[Job], str | None] = job_metadata.managed_by,
    set_managed_by: Callable[[dict[str, Any], str], None] | None = _set_managed_by,
) -> dict[str, Any]:
    """The job as the defaulting webhook leaves it on create (a new dict).

    `set_managed_by` None: the kind cannot be dispatched by MultiKueue (rule 3 skipped).
    """
    result: dict[str, Any] = copy.deepcopy(dict(job))
    meta = result.setdefault("metadata", {})
    if (
        ctx.default_local_queue_exists
        and not job_metadata.queue_name(result)
        and not ctx.owner_is_managed_kind
    ):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}
    if should_suspend(result, ctx) and not is_suspended(result):
        suspend(result)
    queue = job_metadata.queue_name(result)
    if (
        set_managed_by is not None
        and ctx.multikueue_enabled
        and managed_by(result) in (None, own_controller_name)
        and queue
        and ctx.leads_to_multikueue(queue)
    ):
        set_managed_by(result, MULTIKUEUE_MANAGED_BY)
    return result
