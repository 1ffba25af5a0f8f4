"""The StatefulSet webhooks' decisions, after upstream v0.19.2's statefulset webhook.

Defaulting on create (only in namespaces `managedJobsNamespaceSelector` selects): the
`default` LocalQueue when there is one and no queue name; a StatefulSet Kueue manages
gets its pod template marked: queue name, WorkloadPriorityClass and pod-suspending-parent
`statefulset` (the Pod webhook then gates every Pod; the group controller marks the rest
on each Pod). A template another framework marked (a LeaderWorkerSet's) is left alone.
Validation: the queue name is a valid object name and fixed while a replica is ready (and
may not go); WorkloadPriorityClass as every kind; while Kueue manages it, the shape of the
pod template (what the Workload's pod set stands for) cannot change, and the replicas
change only to or from zero, a scale-up from zero only once the scale-down is over
(status.replicas is 0).
"""

from __future__ import annotations

from typing import Any, Final

from core.api.validation.field_errors import FieldError, FieldPath, forbidden
from integrations.framework import job_validation
from integrations.framework.job_metadata import Job, section, spec
from integrations.framework.labels import POD_SUSPENDING_PARENT_ANNOTATION
from integrations.framework.pod_owner_webhook import (
    default_pod_owner,
    validate_pod_owner_create,
    validate_pod_owner_update,
)
from integrations.framework.pod_spec_shape import immutable_pod_spec_shape
from integrations.framework.webhook_context import WebhookContext
from integrations.statefulset import sts_fields as fields

FRAMEWORK_NAME: Final = "statefulset"
REPLICAS_PATH: Final = FieldPath("spec").child("replicas")
POD_SPEC_PATH: Final = FieldPath("spec").child("template").child("spec")


def _template(statefulset: Job) -> dict[str, Any]:
    return dict(section(spec(statefulset), "template"))


def is_queued(statefulset: Job) -> bool:
    """Its template was marked by the defaulting webhook (Kueue manages its Pods)."""
    annotations = section(section(_template(statefulset), "metadata"), "annotations")
    return annotations.get(POD_SUSPENDING_PARENT_ANNOTATION) == FRAMEWORK_NAME


def default_statefulset(statefulset: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The StatefulSet as the defaulting webhook leaves it on create (a new dict)."""
    result, _template_meta = default_pod_owner(statefulset, ctx, FRAMEWORK_NAME)
    return result


def validate_create(statefulset: Job) -> list[FieldError]:
    return validate_pod_owner_create(statefulset)


def validate_update(old: Job, new: Job) -> list[FieldError]:
    errors = validate_pod_owner_update(old, new)
    if not is_queued(new):
        return errors
    errors += immutable_pod_spec_shape(
        section(_template(new), "spec"), section(_template(old), "spec"), POD_SPEC_PATH
    )
    before, after = fields.replicas(old), fields.replicas(new)
    if before and after:
        errors += job_validation.immutable(REPLICAS_PATH, after, before)
    if before == 0 and after > 0 and fields.status_replicas(new) > 0:
        errors.append(forbidden(REPLICAS_PATH, "scaling down is still in progress"))
    return errors
