"""The Pod webhooks' decisions, upstream's Pod webhook rules in order.

Defaulting on create (the webhook is only called in namespaces the Configuration's
`managedJobsNamespaceSelector` selects; the selector is checked again here, since the
chart may be older than the Configuration):
1. a Pod a parent's integration suspends (`pod-suspending-parent`) is gated, nothing else;
2. a Pod outside the selected namespaces, or owned by another enabled kind (a Job's pods:
   the Job's Workload covers them) is left as it is;
3. without a queue name it gets `default` when a LocalQueue of that name exists;
4. a Pod with a queue name (or any, with manageJobsWithoutQueueName) gets the label
   `kueue.x-k8s.io/managed=true`, the finalizer `kueue.x-k8s.io/managed` and the
   scheduling gates `kueue.x-k8s.io/admission` and `kueue.x-k8s.io/topology`
   (`topology_gate`); every gated Pod gets its role hash
   (`kueue.x-k8s.io/role-hash`), which names its pod set in a group.
Validation: the shared job rules (a Pod whose LocalQueue leads to MultiKueue is accepted:
it is dispatched, `multikueue_adapter` — a Deployment's Pods too, each on its own, as
upstream's); the managed label may only be `true`; a
pod-group name and total count come together (the count a positive integer); the group name and
`retriable-in-group: false` cannot be taken back.
"""

from __future__ import annotations

import copy
from typing import Any

from core.api.validation.field_errors import FieldError, forbidden, required
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_metadata import Job, annotations_of, labels_of, parse_int
from integrations.framework.job_validation import ANNOTATIONS_PATH, LABELS_PATH
from integrations.framework.labels import DEFAULT_LOCAL_QUEUE_NAME, QUEUE_NAME_LABEL
from integrations.framework.webhook_context import WebhookContext
from integrations.pod import pod_fields as fields
from integrations.pod.admission import is_suspended
from integrations.pod.group_validation import validate_group_labels
from integrations.pod.role_hash import ROLE_HASH_ANNOTATION, generate_role_hash
from integrations.pod.topology_gate import add_topology_gate

_GROUP_DETAIL = (
    f"both the '{fields.GROUP_TOTAL_COUNT_ANNOTATION}' annotation and the "
    f"'{fields.GROUP_NAME_LABEL}' label should be set"
)


def _gate(pod: dict[str, Any]) -> None:
    """The admission gate, and the role hash upstream records on every gated Pod."""
    spec = pod.setdefault("spec", {})
    gates = list(spec.get("schedulingGates") or ())
    if not any(g.get("name") == fields.ADMISSION_GATE for g in gates):
        gates.append({"name": fields.ADMISSION_GATE})
    spec["schedulingGates"] = gates
    add_topology_gate(pod)
    meta = pod.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations.setdefault(ROLE_HASH_ANNOTATION, generate_role_hash(spec))  # a parent's wins
    meta["annotations"] = annotations


def default_pod(pod: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The Pod as the defaulting webhook leaves it on create (a new dict)."""
    result: dict[str, Any] = copy.deepcopy(dict(pod))
    if fields.suspended_by_parent(result):
        _gate(result)
        return result
    if not ctx.namespace_selected or ctx.ancestor_managed_by_kueue or ctx.owner_is_managed_kind:
        return result
    meta = result.setdefault("metadata", {})
    if ctx.default_local_queue_exists and not job_metadata.queue_name(result):
        meta["labels"] = {**(meta.get("labels") or {}), QUEUE_NAME_LABEL: DEFAULT_LOCAL_QUEUE_NAME}
    if not job_metadata.queue_name(result) and not ctx.manage_jobs_without_queue_name:
        return result
    meta["labels"] = {**(meta.get("labels") or {}), fields.MANAGED_LABEL: fields.MANAGED_VALUE}
    finalizers = list(meta.get("finalizers") or ())
    if fields.POD_FINALIZER not in finalizers:
        meta["finalizers"] = [*finalizers, fields.POD_FINALIZER]
    _gate(result)
    return result


def _validate_common(pod: Job) -> list[FieldError]:
    errors: list[FieldError] = []
    managed = labels_of(pod).get(fields.MANAGED_LABEL)
    if managed is not None and managed != fields.MANAGED_VALUE:
        errors.append(
            forbidden(
                LABELS_PATH.key(fields.MANAGED_LABEL),
                f"managed label value can only be '{fields.MANAGED_VALUE}'",
            )
        )
    total = annotations_of(pod).get(fields.GROUP_TOTAL_COUNT_ANNOTATION)
    total_path = ANNOTATIONS_PATH.key(fields.GROUP_TOTAL_COUNT_ANNOTATION)
    if not fields.group_name(pod):
        if total is not None:
            errors.append(required(LABELS_PATH.key(fields.GROUP_NAME_LABEL), _GROUP_DETAIL))
        return errors
    errors += validate_group_labels(pod)
    if total is None:
        errors.append(required(total_path, _GROUP_DETAIL))
        return errors
    count = parse_int(total)
    if count is None or count < 1:
        errors.append(job_validation.invalid_value(total_path, total, "must be a positive integer"))
    return errors


def validate_create(pod: Job, ctx: WebhookContext) -> list[FieldError]:
    return [*job_validation.validate_on_create(pod), *_validate_common(pod)]


def is_queued(pod: Job) -> bool:
    """Marked managed by the defaulting webhook (or by the user)."""
    return fields.is_managed(pod)


def validate_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    errors = [
        *job_validation.validate_update_common(old, new, ctx, is_suspended),
        *_validate_common(new),
    ]
    if fields.group_name(old):
        errors += job_validation.immutable(
            LABELS_PATH.key(fields.GROUP_NAME_LABEL), fields.group_name(new), fields.group_name(old)
        )
    retriable = fields.RETRIABLE_IN_GROUP_ANNOTATION
    if (
        fields.group_name(new)
        and annotations_of(old).get(retriable) == "false"
        and annotations_of(new).get(retriable) != "false"
    ):
        errors.append(
            forbidden(
                ANNOTATIONS_PATH.key(retriable),
                "unretriable pod group can't be converted to retriable",
            )
        )
    return errors
