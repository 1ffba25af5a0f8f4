"""MultiKueue for batch/v1 Jobs: the framework's copy, minus what a Job's apiserver made.

The copy and the status rule are `framework.multikueue_copy`'s. A Job's copy also loses
its selector and the controller-uid pod labels: the manager's apiserver generated them
from the manager Job's UID, and they would not match the worker's new Job.
"""

from __future__ import annotations

from typing import Any

from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.framework.job_kind import StatusSync
from integrations.framework.labels import (
    BATCH_CONTROLLER_UID_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from integrations.framework.multikueue_copy import remote_copy, whole_status_sync

__all__ = ["remote_job", "remote_status_sync"]

# Pod labels derived from the manager Job's UID; the worker's apiserver writes its own.
_GENERATED_POD_LABELS = (
    LEGACY_JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    BATCH_CONTROLLER_UID_LABEL,
)


def _drop_generated(spec: dict[str, Any]) -> None:
    spec.pop("selector", None)
    template_meta = spec.get("template", {}).get("metadata")
    if isinstance(template_meta, dict) and isinstance(template_meta.get("labels"), dict):
        for label in _GENERATED_POD_LABELS:
            template_meta["labels"].pop(label, None)


def remote_job(local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
    """The Job to create on the worker for `local`, dispatched under `workload_name`."""
    body = remote_copy(
        local, workload_name=workload_name, origin=origin, clean_spec=_drop_generated
    )
    body["apiVersion"] = body["apiVersion"] or job_fields.JOB_API_VERSION
    body["kind"] = body["kind"] or job_fields.JOB_KIND
    return body


def remote_status_sync(local: Job, remote: Job) -> StatusSync:
    """Whether and what to copy from the worker's Job onto the manager's Job."""
    return whole_status_sync(local, remote, is_suspended=job_fields.is_suspended)
