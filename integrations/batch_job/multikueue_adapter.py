"""MultiKueue for batch/v1 Jobs: the remote copy a worker runs, and whose status comes back.

On the manager a MultiKueue Job is managed by `kueue.x-k8s.io/multikueue`, so nothing
runs there. The worker gets a copy: same name, namespace, labels, annotations and spec,
minus what the manager's apiserver generated (the selector and the controller-uid pod
labels, which would not match the new Job's UID), plus the origin label (which worker
objects are ours to delete) and the prebuilt-workload label (the worker's Kueue adopts the
already-dispatched Workload instead of creating one). Its managedBy is cleared so the
worker's own Job controller runs it.

The remote Job's whole status is copied back onto the manager's Job, but only while the
manager's Job is managed by MultiKueue (otherwise the local Job controller owns that
status), and never while the local Job is suspended (as upstream): before its start the
copy would race the unsuspend, and after a stop (an eviction on the manager) it would put
back the `startTime` the stop removed, so the Job's template could never be restored.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass
from typing import Any

from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.labels import (
    BATCH_CONTROLLER_UID_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    MULTIKUEUE_MANAGED_BY,
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
)

__all__ = [
    "StatusSync",
    "StatusSyncDecision",
    "managed_by_multikueue",
    "remote_job",
    "remote_status_sync",
    "workload_name_of_remote_job",
]

# Pod labels derived from the manager Job's UID; the worker's apiserver writes its own.
_GENERATED_POD_LABELS = (
    LEGACY_JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    BATCH_CONTROLLER_UID_LABEL,
)


def managed_by_multikueue(job: Job) -> tuple[bool, str]:
    """Whether MultiKueue may dispatch the Job, and if not, the reason to report."""
    managed_by = job_fields.managed_by(job) or ""
    if managed_by == MULTIKUEUE_MANAGED_BY:
        return True, ""
    return False, f'Expecting spec.managedBy to be "{MULTIKUEUE_MANAGED_BY}" not "{managed_by}"'


def remote_job(local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
    """The Job to create on the worker for `local`, dispatched under `workload_name`."""
    meta = job_fields.metadata(local)
    labels = dict(meta.get("labels") or {})
    labels[PREBUILT_WORKLOAD_LABEL] = workload_name
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin
    metadata: dict[str, Any] = {
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "labels": labels,
    }
    if meta.get("annotations"):
        metadata["annotations"] = copy.deepcopy(dict(meta["annotations"]))
    spec: dict[str, Any] = copy.deepcopy(dict(job_fields.spec(local)))
    spec.pop("selector", None)
    spec.pop("managedBy", None)
    template_meta = spec.get("template", {}).get("metadata")
    if isinstance(template_meta, dict) and isinstance(template_meta.get("labels"), dict):
        for label in _GENERATED_POD_LABELS:
            template_meta["labels"].pop(label, None)
    return {
        "apiVersion": local.get("apiVersion", job_fields.JOB_API_VERSION),
        "kind": local.get("kind", job_fields.JOB_KIND),
        "metadata": metadata,
        "spec": spec,
    }


def workload_name_of_remote_job(remote: Job) -> str | None:
    """The manager Workload a worker's Job was dispatched for (None: not one of ours)."""
    return job_fields.prebuilt_workload_name(remote)


class StatusSyncDecision(enum.Enum):
    """What to do with a remote Job's status."""

    COPY = "copy"
    """Write `status` onto the local Job's status subresource."""
    NOT_MANAGED = "not-managed"
    """The local Job is not managed by MultiKueue: its status is not ours to write."""
    LOCAL_SUSPENDED = "local-suspended"
    """The local Job is not unsuspended yet; try again once it is."""
    IN_SYNC = "in-sync"
    """The local status already equals the remote one: nothing to write."""


@dataclass(frozen=True, slots=True)
class StatusSync:
    decision: StatusSyncDecision
    status: dict[str, Any] | None = None
    """With COPY: the local Job's status to write (the remote one, whole)."""


def remote_status_sync(local: Job, remote: Job) -> StatusSync:
    """Whether and what to copy from the worker's Job onto the manager's Job."""
    if not managed_by_multikueue(local)[0]:
        return StatusSync(StatusSyncDecision.NOT_MANAGED)
    if job_fields.is_suspended(local):
        return StatusSync(StatusSyncDecision.LOCAL_SUSPENDED)
    status = copy.deepcopy(dict(job_fields.status(remote)))
    if status == dict(job_fields.status(local)):
        return StatusSync(StatusSyncDecision.IN_SYNC)
    return StatusSync(StatusSyncDecision.COPY, status)
