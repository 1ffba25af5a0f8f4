"""MultiKueue for any Job-like kind: the remote copy a worker runs, and its status back.

On the manager a MultiKueue job is managed by `kueue.x-k8s.io/multikueue`, so nothing
runs there. The worker gets a copy: same name, namespace, labels, annotations and spec,
minus `spec.managedBy` (so the worker's own controller for the kind runs it) and minus
what the kind says the manager's apiserver generated, plus the origin label (which worker
objects are ours to delete) and the prebuilt-workload label (the worker's Kueue adopts the
already-dispatched Workload instead of creating one).

The remote job's whole status is copied back onto the manager's job, but only while the
manager's job is managed by MultiKueue (otherwise the local controller owns that status),
and never while the local job is suspended (as upstream): before its start the copy would
race the unsuspend, and after a stop (an eviction on the manager) it would put back
running state the stop removed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from integrations.framework import job_metadata
from integrations.framework.job_kind import StatusSync, StatusSyncDecision
from integrations.framework.job_metadata import Job
from integrations.framework.labels import (
    MULTIKUEUE_MANAGED_BY,
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
)


def managed_by_multikueue(managed_by: str | None) -> tuple[bool, str]:
    """Whether MultiKueue may dispatch a job with this managedBy, else the reason to say."""
    if managed_by == MULTIKUEUE_MANAGED_BY:
        return True, ""
    shown = managed_by or ""
    return False, f'Expecting spec.managedBy to be "{MULTIKUEUE_MANAGED_BY}" not "{shown}"'


def remote_copy(
    local: Job,
    *,
    workload_name: str,
    origin: str,
    clean_spec: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The copy of `local` for a worker; `clean_spec` drops the kind's generated fields."""
    meta = job_metadata.metadata(local)
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
    spec: dict[str, Any] = copy.deepcopy(dict(job_metadata.spec(local)))
    spec.pop("managedBy", None)
    if clean_spec is not None:
        clean_spec(spec)
    return {
        "apiVersion": local.get("apiVersion", ""),
        "kind": local.get("kind", ""),
        "metadata": metadata,
        "spec": spec,
    }


def never_suspended(_: Job) -> bool:
    """`is_suspended` for kinds whose status upstream copies back whatever the local job's
    suspend says (JobSet, the Kubeflow and Ray kinds, TrainJob)."""
    return False


def whole_status_sync(
    local: Job,
    remote: Job,
    *,
    is_suspended: Callable[[Job], bool] = job_metadata.suspend_field,
    managed_by: Callable[[Job], str | None] = job_metadata.managed_by,
) -> StatusSync:
    """Copy the remote status whole, under the rules of the module docstring."""
    if not managed_by_multikueue(managed_by(local))[0]:
        return StatusSync(StatusSyncDecision.NOT_MANAGED)
    if is_suspended(local):
        return StatusSync(StatusSyncDecision.LOCAL_SUSPENDED)
    status = copy.deepcopy(dict(job_metadata.status(remote)))
    local_status: Mapping[str, Any] = job_metadata.status(local)
    if status == dict(local_status):
        return StatusSync(StatusSyncDecision.IN_SYNC)
    return StatusSync(StatusSyncDecision.COPY, status)
