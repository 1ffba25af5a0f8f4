"""The webhook's rules for a pod group's labels, beyond "name and count come together".

As upstream's Pod webhook: the group name (the `kueue.x-k8s.io/pod-group-name`
annotation, or else the label of that key) becomes the Workload's name, so it must be a
valid object name (a lowercase RFC 1123 subdomain); and a Pod of a group naming a
prebuilt Workload must name the group's own (the group's Workload is the prebuilt one).
A group name may be added to a Pod that had none (the Pod then joins the group); once
set it cannot change (`webhook.validate_update`).
"""

from __future__ import annotations

from core.api.validation.field_errors import FieldError
from integrations.framework import job_metadata, job_validation
from integrations.framework.job_metadata import Job, annotations_of
from integrations.framework.job_validation import ANNOTATIONS_PATH, LABELS_PATH
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL
from integrations.pod import pod_fields as fields


def validate_group_labels(pod: Job) -> list[FieldError]:
    """Problems with a grouped Pod's group name and prebuilt Workload name."""
    errors = job_validation.validate_object_name_label(pod, fields.GROUP_NAME_LABEL)
    annotated = annotations_of(pod).get(fields.GROUP_NAME_ANNOTATION)
    problem = job_validation.object_name_problem(str(annotated)) if annotated else None
    if problem is not None:
        path = ANNOTATIONS_PATH.key(fields.GROUP_NAME_ANNOTATION)
        errors.append(job_validation.invalid_value(path, annotated, problem))
    prebuilt = job_metadata.prebuilt_workload_name(pod)
    if prebuilt and prebuilt != fields.group_name(pod):
        errors.append(
            job_validation.invalid_value(
                LABELS_PATH.key(PREBUILT_WORKLOAD_LABEL),
                prebuilt,
                "prebuilt workload and pod group should be equal",
            )
        )
    return errors
