"""Webhook rules shared by the kinds that queue their Pods instead of themselves.

A Deployment or a StatefulSet is never suspended: Kueue queues the Pods it creates. Its
defaulting webhook (only in namespaces `managedJobsNamespaceSelector` selects) gives it the
`default` LocalQueue when it has no queue name and one exists, and, when Kueue manages it,
marks its pod template so every Pod it makes is gated and queued: the queue name, the
WorkloadPriorityClass label, `kueue.x-k8s.io/managed=true` and the pod-suspending-parent
annotation naming the framework. Its queue name must be a valid object name and cannot
change (or go) while any replica is ready — upstream counts "no replica ready" as
suspended — and a WorkloadPriorityClass follows the shared rules.
"""

from __future__ import annotations

import copy
from typing import Any

from core.api.validation.field_errors import FieldError
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import should_suspend
from integrations.framework.job_metadata import Job, int_value, section, spec
from integrations.framework.labels import (
    DEFAULT_LOCAL_QUEUE_NAME,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_SUSPENDING_PARENT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext


def default_pod_owner(
    obj: Job, ctx: WebhookContext, framework: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The object as the defaulting webhook leaves it on create (a new dict), and its pod
    template's metadata when the template was marked for queueing (None otherwise), for
    the kind to add its own marks to."""
    result, queued = defaulted_owner(obj, ctx)
    if not queued or _suspended_by_another_parent(result, framework):
        return result, None
    template = result.setdefault("spec", {}).setdefault("template", {})
    template_meta = mark_pod_template(template, result, framework)
    template_meta["labels"][MANAGED_LABEL] = MANAGED_LABEL_VALUE
    return result, template_meta


def _suspended_by_another_parent(obj: Job, framework: str) -> bool:
    """Its template already carries another framework's marks (a LeaderWorkerSet's
    StatefulSets copy its marked templates): that framework queues its Pods."""
    template = section(spec(obj), "template")
    parent = section(section(template, "metadata"), "annotations").get(
        POD_SUSPENDING_PARENT_ANNOTATION
    )
    return parent is not None and parent != framework


def defaulted_owner(obj: Job, ctx: WebhookContext) -> tuple[dict[str, Any], bool]:
    """The object with the `default` LocalQueue when it has no queue name and one exists
    (only in namespaces `managedJobsNamespaceSelector` selects; a new dict), and whether
    Kueue manages it, so its pod templates are to be marked."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    if not ctx.namespace_selected:
        return result, False
    meta = result.setdefault("metadata", {})
    if ctx.default_local_queue_exists and not job_metadata.queue_name(result):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}
    return result, should_suspend(result, ctx)


def mark_pod_template(template: dict[str, Any], owner: Job, framework: str) -> dict[str, Any]:
    """Mark a pod template of a queued `owner` so the Pod webhook gates its Pods: the
    owner's queue name and WorkloadPriorityClass labels and the pod-suspending-parent
    annotation naming `framework`. Returns the template's metadata (changed in place)."""
    template_meta: dict[str, Any] = template.setdefault("metadata", {})
    labels = dict(template_meta.get("labels") or {})
    if queue := job_metadata.queue_name(owner):
        labels[QUEUE_NAME_LABEL] = queue
    if priority_class := job_metadata.workload_priority_class_name(owner):
        labels[PRIORITY_CLASS_LABEL] = priority_class
    annotations = dict(template_meta.get("annotations") or {})
    annotations[POD_SUSPENDING_PARENT_ANNOTATION] = framework
    template_meta["labels"] = labels
    template_meta["annotations"] = annotations
    return template_meta


def no_replica_ready(obj: Job) -> bool:
    """Upstream counts a Deployment or StatefulSet with no ready replica as suspended."""
    return not int_value(job_metadata.status(obj).get("readyReplicas"))


def validate_pod_owner_create(obj: Job) -> list[FieldError]:
    return job_validation.validate_object_name_label(obj, QUEUE_NAME_LABEL)


def validate_pod_owner_update(old: Job, new: Job) -> list[FieldError]:
    errors = job_validation.validate_object_name_label(new, QUEUE_NAME_LABEL)
    old_queue, new_queue = job_metadata.queue_name(old), job_metadata.queue_name(new)
    suspended = no_replica_ready(old)
    if not suspended or not new_queue:
        errors += job_validation.immutable(job_validation.QUEUE_NAME_PATH, new_queue, old_queue)
    errors += job_validation.validate_priority_class_update(old, new, lambda _: suspended)
    return errors
