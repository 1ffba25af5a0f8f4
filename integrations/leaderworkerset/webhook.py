"""The LeaderWorkerSet webhooks' decisions, after upstream's leaderworkerset webhook.

Defaulting on create (only in namespaces `managedJobsNamespaceSelector` selects): the
`default` LocalQueue when there is one and no queue name; a LeaderWorkerSet Kueue manages
gets its leader and worker templates marked: queue name, WorkloadPriorityClass,
pod-suspending-parent `leaderworkerset.x-k8s.io/leaderworkerset` and pod-group-serving
(the Pod webhook then gates every Pod; the group controller marks the rest on each Pod).
Validation: the queue name is a valid object name (one leading to MultiKueue is fine: the
LeaderWorkerSet is dispatched whole); replicas between 0 and 1,000,000; the
queue name is fixed (and may not go) while a replica is ready; WorkloadPriorityClass as
every kind; and while Kueue manages it, the shape of each pod template (what the
Workload's pod sets stand for: requests, nodeSelector, affinity, tolerations, ...) and the
group size cannot change, nor can a leader template come or go. Images, commands and the
replicas may change: the LWS controller rolls the groups or scales them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.api.validation.field_errors import FieldError, FieldPath
from integrations.framework import job_validation
from integrations.framework.job_defaulting import should_suspend
from integrations.framework.job_metadata import Job, section
from integrations.framework.labels import (
    POD_GROUP_SERVING_ANNOTATION,
    POD_SUSPENDING_PARENT_ANNOTATION,
)
from integrations.framework.pod_owner_webhook import (
    defaulted_owner,
    mark_pod_template,
    validate_pod_owner_create,
    validate_pod_owner_update,
)
from integrations.framework.pod_spec_shape import immutable_pod_spec_shape
from integrations.framework.webhook_context import WebhookContext
from integrations.leaderworkerset import lws_fields as fields

FRAMEWORK_NAME: Final = "leaderworkerset.x-k8s.io/leaderworkerset"
SPEC_PATH: Final = FieldPath("spec")
REPLICAS_PATH: Final = SPEC_PATH.child("replicas")
TEMPLATE_PATH: Final = SPEC_PATH.child("leaderWorkerTemplate")
SIZE_PATH: Final = TEMPLATE_PATH.child("size")
LEADER_TEMPLATE_PATH: Final = TEMPLATE_PATH.child("leaderTemplate")
WORKER_TEMPLATE_PATH: Final = TEMPLATE_PATH.child("workerTemplate")


def default_leaderworkerset(lws: Job, ctx: WebhookContext) -> dict[str, Any]:
    """The LeaderWorkerSet as the defaulting webhook leaves it on create (a new dict)."""
    result, queued = defaulted_owner(lws, ctx)
    if not queued:
        return result
    template = result.setdefault("spec", {}).setdefault("leaderWorkerTemplate", {})
    names = ["leaderTemplate", "workerTemplate"]
    for name in names if isinstance(template.get("leaderTemplate"), dict) else names[1:]:
        pod_template = template.setdefault(name, {})
        meta = mark_pod_template(pod_template, result, FRAMEWORK_NAME)
        meta["annotations"][POD_GROUP_SERVING_ANNOTATION] = "true"
    return result


def _validate_replicas(lws: Job) -> list[FieldError]:
    count = fields.replicas(lws)
    if count < 0:
        return [job_validation.invalid_value(REPLICAS_PATH, count, "must be >= 0")]
    if count > fields.MAX_REPLICAS:
        return [
            job_validation.invalid_value(REPLICAS_PATH, count, f"must be <= {fields.MAX_REPLICAS}")
        ]
    return []


def validate_create(lws: Job, ctx: WebhookContext) -> list[FieldError]:
    return [
        *validate_pod_owner_create(lws),
        *_validate_replicas(lws),
    ]


def _template_spec(template: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return section(template or {}, "spec")


def _immutable_shape(
    new: Mapping[str, Any] | None, old: Mapping[str, Any] | None, path: FieldPath
) -> list[FieldError]:
    if (new is None) != (old is None):
        return job_validation.immutable(path, new is not None, old is not None)
    return immutable_pod_spec_shape(_template_spec(new), _template_spec(old), path.child("spec"))


def validate_update(old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
    errors = [*validate_pod_owner_update(old, new), *_validate_replicas(new)]
    if not should_suspend(new, ctx):
        return errors
    errors += _immutable_shape(
        fields.leader_template(new), fields.leader_template(old), LEADER_TEMPLATE_PATH
    )
    errors += _immutable_shape(
        fields.worker_template(new), fields.worker_template(old), WORKER_TEMPLATE_PATH
    )
    errors += job_validation.immutable(SIZE_PATH, fields.size(new), fields.size(old))
    return errors


def is_queued(lws: Job) -> bool:
    """Its templates were marked by the defaulting webhook (Kueue manages its Pods)."""
    meta = section(fields.worker_template(lws), "metadata")
    annotations = section(meta, "annotations")
    return annotations.get(POD_SUSPENDING_PARENT_ANNOTATION) == FRAMEWORK_NAME
