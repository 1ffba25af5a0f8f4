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

from typing import Any, Final

from core.api.validation.field_errors import FieldError, FieldPath, forbidden
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_metadata import Job, int_value, parse_int, section, spec
from integrations.framework.labels import (
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_SERVING_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_ROLE_HASH_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
)
from integrations.framework.pod_owner_webhook import (
    default_pod_owner,
    validate_pod_owner_create,
    validate_pod_owner_update,
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
    """The StatefulSet as the defaulting webhook leaves it on create (a new dict): marked
    as every Pod owner is, plus one serving, fast-admission group of `replicas` Pods."""
    result, template_meta = default_pod_owner(statefulset, ctx, FRAMEWORK_NAME)
    if template_meta is None:
        return result
    template_meta["labels"][POD_GROUP_NAME_LABEL] = group_name(result)
    template_meta["annotations"].update(
        {
            POD_GROUP_TOTAL_COUNT_ANNOTATION: str(replicas(result)),
            POD_GROUP_FAST_ADMISSION_ANNOTATION: "true",
            POD_GROUP_SERVING_ANNOTATION: "true",
            POD_ROLE_HASH_ANNOTATION: "main",
        }
    )
    return result


def validate_create(statefulset: Job) -> list[FieldError]:
    return validate_pod_owner_create(statefulset)


def validate_update(old: Job, new: Job) -> list[FieldError]:
    errors = validate_pod_owner_update(old, new)
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
