"""The StatefulSet webhooks' decisions, after upstream's statefulset webhook and pod
reconciler (fleetq writes on the template at create what upstream writes on each Pod).

Defaulting on create (only in namespaces `managedJobsNamespaceSelector` selects): the
`default` LocalQueue when there is one and no queue name; a StatefulSet Kueue manages gets
its pod template marked: queue name, WorkloadPriorityClass, `kueue.x-k8s.io/managed=true`,
the group name `statefulset-<name>`, total count = replicas, fast admission, serving,
role hash `main` and pod-suspending-parent `statefulset`.
Validation: the queue name is a valid object name and fixed while a replica is ready; the
replicas of a queued StatefulSet change only to or from zero, and from zero back to the
count its template was queued with (fleetq does not rewrite the template on update).
"""

from __future__ import annotations

import copy
from typing import Any, Final

from core.api.validation.field_errors import FieldError, FieldPath, forbidden
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_defaulting import should_suspend
from integrations.framework.job_metadata import Job, int_value, parse_int, section, spec
from integrations.framework.labels import (
    DEFAULT_LOCAL_QUEUE_NAME,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_SERVING_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_ROLE_HASH_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.webhook_context import WebhookContext

FRAMEWORK_NAME: Final = "statefulset"
REPLICAS_PATH: Final = FieldPath("spec").child("replicas")


def group_name(statefulset: Job) -> str:
    return f"statefulset-{job_metadata.metadata(statefulset).get('name', '')}"


def replicas(statefulset: Job) -> int:
    value = int_value(spec(statefulset).get("replicas"))
    return 1 if value is None else value


def _template_annotations(statefulset: Job) -> dict[str, Any]:
    template = section(spec(statefulset), "template")
    return dict(section(section(template, "metadata"), "annotations"))


def is_queued(statefulset: Job) -> bool:
    return _template_annotations(statefulset).get(POD_SUSPENDING_PARENT_ANNOTATION) == (
        FRAMEWORK_NAME
    )


def default_statefulset(statefulset: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The StatefulSet as the defaulting webhook leaves it on create (a new dict)."""
    result: dict[str, Any] = copy.deepcopy(dict(statefulset))
    if not ctx.namespace_selected:
        return result
    meta = result.setdefault("metadata", {})
    if ctx.default_local_queue_exists and not job_metadata.queue_name(result):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}
    if not should_suspend(result, ctx):
        return result
    template_meta = (
        result.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
    )
    labels = dict(template_meta.get("labels") or {})
    labels[MANAGED_LABEL] = MANAGED_LABEL_VALUE
    labels[POD_GROUP_NAME_LABEL] = group_name(result)
    if queue := job_metadata.queue_name(result):
        labels[QUEUE_NAME_LABEL] = queue
    if priority_class := job_metadata.workload_priority_class_name(result):
        labels[PRIORITY_CLASS_LABEL] = priority_class
    annotations = dict(template_meta.get("annotations") or {})
    annotations.update(
        {
            POD_SUSPENDING_PARENT_ANNOTATION: FRAMEWORK_NAME,
            POD_GROUP_TOTAL_COUNT_ANNOTATION: str(replicas(result)),
            POD_GROUP_FAST_ADMISSION_ANNOTATION: "true",
            POD_GROUP_SERVING_ANNOTATION: "true",
            POD_ROLE_HASH_ANNOTATION: "main",
        }
    )
    template_meta["labels"] = labels
    template_meta["annotations"] = annotations
    return result


def validate_create(statefulset: Job) -> list[FieldError]:
    return job_validation.validate_object_name_label(statefulset, QUEUE_NAME_LABEL)


def _no_replica_ready(statefulset: Job) -> bool:
    return not int_value(job_metadata.status(statefulset).get("readyReplicas"))


def validate_update(old: Job, new: Job) -> list[FieldError]:
    errors = job_validation.validate_object_name_label(new, QUEUE_NAME_LABEL)
    old_queue, new_queue = job_metadata.queue_name(old), job_metadata.queue_name(new)
    suspended = _no_replica_ready(old)
    if not suspended or not new_queue:
        errors += job_validation.immutable(job_validation.QUEUE_NAME_PATH, new_queue, old_queue)
    errors += job_validation.validate_priority_class_update(old, new, lambda _: suspended)
    if not is_queued(new):
        return errors
    before, after = replicas(old), replicas(new)
    if before and after:
        errors += job_validation.immutable(REPLICAS_PATH, after, before)
    queued_with = parse_int(_template_annotations(new).get(POD_GROUP_TOTAL_COUNT_ANNOTATION))
    if before == 0 and after and after != queued_with:
        errors.append(
            forbidden(
                REPLICAS_PATH,
                f"this StatefulSet was queued as a group of {queued_with} Pods; scale it "
                f"back to {queued_with}, or recreate it to queue {after}",
            )
        )
    return errors
