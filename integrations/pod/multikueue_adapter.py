"""MultiKueue for plain Pods and pod groups, as upstream v0.19.2's pod adapter does it.

A Pod has no managedBy: a queued Pod whose Workload has a MultiKueue check is always
dispatched, and on the manager it stays scheduling-gated for good (the job controller
never ungates it there), so it runs only on the worker. The worker gets a copy of the
Pod (of every Pod, for a group): same name, namespace, labels, annotations and spec —
the admission gate and the managed label included, so the worker's Kueue holds it and
adopts the dispatched Workload the prebuilt-workload label names — plus the origin label.

Status: the worker Pod's whole status is copied onto the manager's Pod (phase,
container statuses, IPs), which is how the manager sees it run and finish. One
exception: while the worker Pod is not scheduled, the manager Pod keeps its own
`PodScheduled` condition (False, `SchedulingGated`), so an autoscaler on the manager
never takes the still-gated Pod for an unschedulable one. A Pod being deleted on the
manager is left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from integrations.framework.job_kind import StatusSync, StatusSyncDecision
from integrations.framework.job_metadata import Job, metadata, status
from integrations.framework.multikueue_copy import remote_copy
from integrations.pod import pod_fields as fields

__all__ = ["remote_pod", "remote_status_sync"]

POD_SCHEDULED = "PodScheduled"


def remote_pod(local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
    """The Pod to create on the worker for the manager's `local` Pod."""
    body = remote_copy(local, workload_name=workload_name, origin=origin)
    body["apiVersion"] = body["apiVersion"] or fields.POD_VERSION
    body["kind"] = body["kind"] or fields.POD_KIND
    return body


def _condition(pod_status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in pod_status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def _with_condition(pod_status: dict[str, Any], condition: Mapping[str, Any]) -> None:
    """Put `condition` in place of the one of its type (appended when there is none)."""
    kept = copy.deepcopy(dict(condition))
    conditions = list(pod_status.get("conditions") or ())
    for index, current in enumerate(conditions):
        if isinstance(current, Mapping) and current.get("type") == kept.get("type"):
            conditions[index] = kept
            break
    else:
        conditions.append(kept)
    pod_status["conditions"] = conditions


def remote_status_sync(local: Job, remote: Job) -> StatusSync:
    """Whether and what to copy from the worker's Pod onto the manager's (module docstring)."""
    if metadata(local).get("deletionTimestamp"):
        return StatusSync(StatusSyncDecision.NOT_MANAGED)
    local_status: Mapping[str, Any] = status(local)
    wanted: dict[str, Any] = copy.deepcopy(dict(status(remote)))
    local_scheduled = _condition(local_status, POD_SCHEDULED)
    remote_scheduled = _condition(wanted, POD_SCHEDULED)
    remote_placed = remote_scheduled is not None and remote_scheduled.get("status") == "True"
    if fields.has_gate(local) and local_scheduled is not None and not remote_placed:
        _with_condition(wanted, local_scheduled)
    if wanted == dict(local_status):
        return StatusSync(StatusSyncDecision.IN_SYNC)
    return StatusSync(StatusSyncDecision.COPY, wanted)
