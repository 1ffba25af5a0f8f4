"""The Deployment webhooks' decisions, upstream's deployment webhook rules.

Defaulting on create (only in namespaces `managedJobsNamespaceSelector` selects):
a Deployment without a queue name gets `default` when a LocalQueue of that name exists;
one Kueue manages (a queue name, or manageJobsWithoutQueueName) gets its pod template
marked: the queue name, the WorkloadPriorityClass label, `kueue.x-k8s.io/managed=true`
and the pod-suspending-parent annotation `deployment`.
Validation: the queue name must be a valid object name; it cannot change (or go) while
any replica is ready, and a WorkloadPriorityClass follows the shared rules.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from core.api.validation.field_errors import FieldError
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import should_suspend
from integrations.framework.job_metadata import Job, int_value
from integrations.framework.labels import (
    DEFAULT_LOCAL_QUEUE_NAME,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_SUSPENDING_PARENT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext

FRAMEWORK_NAME: Final = "deployment"


def _template_meta(deployment: dict[str, Any]) -> dict[str, Any]:
    template = deployment.setdefault("spec", {}).setdefault("template", {})
    meta: dict[str, Any] = template.setdefault("metadata", {})
    return meta


def default_deployment(deployment: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The Deployment as the defaulting webhook leaves it on create (a new dict)."""
    result: dict[str, Any] = copy.deepcopy(dict(deployment))
    if not ctx.namespace_selected:
        return result
    meta = result.setdefault("metadata", {})
    if ctx.default_local_queue_exists and not job_metadata.queue_name(result):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}
    if not should_suspend(result, ctx):
        return result
    template_meta = _template_meta(result)
    annotations = dict(template_meta.get("annotations") or {})
    annotations[POD_SUSPENDING_PARENT_ANNOTATION] = FRAMEWORK_NAME
    labels = dict(template_meta.get("labels") or {})
    labels[MANAGED_LABEL] = MANAGED_LABEL_VALUE
    if queue := job_metadata.queue_name(result):
        labels[QUEUE_NAME_LABEL] = queue
    if priority_class := job_metadata.workload_priority_class_name(result):
        labels[PRIORITY_CLASS_LABEL] = priority_class
    template_meta["annotations"] = annotations
    template_meta["labels"] = labels
    return result


def _no_replica_ready(deployment: Job) -> bool:
    """Upstream counts a Deployment with no ready replica as suspended."""
    return not int_value(job_metadata.status(deployment).get("readyReplicas"))


def validate_create(deployment: Job) -> list[FieldError]:
    return job_validation.validate_object_name_label(deployment, QUEUE_NAME_LABEL)


def validate_update(old: Job, new: Job) -> list[FieldError]:
    errors = job_validation.validate_object_name_label(new, QUEUE_NAME_LABEL)
    old_queue, new_queue = job_metadata.queue_name(old), job_metadata.queue_name(new)
    suspended = _no_replica_ready(old)
    if not suspended or not new_queue:
        errors += job_validation.immutable(job_validation.QUEUE_NAME_PATH, new_queue, old_queue)
    errors += job_validation.validate_priority_class_update(old, new, lambda _: suspended)
    return errors
