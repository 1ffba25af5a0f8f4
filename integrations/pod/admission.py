"""Starting an admitted Pod and stopping one, as upstream Kueue does.

Start: the Pod is its own template: the admission's one pod set (its flavors' node labels
and tolerations, admission checks' podSetUpdates, Kueue's pod labels) is merged into the
Pod, and the admission gate comes off (the topology gate too, unless the admission put
it there), so the scheduler places it. A gated Pod accepts exactly these changes.

Stop: a Pod cannot be suspended. A gated or terminated one needs nothing; a running one
gets the `TerminationTarget` condition saying why (one status write) and is then deleted
by the job controller (`StopsByDeletion`). Its owner (a ReplicaSet) makes a new gated
Pod, queued afresh. Nothing is restored: the Pod goes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.framework.job_kind import JobSubresource, JobWrite
from integrations.framework.job_metadata import Job
from integrations.framework.json_patch import diff
from integrations.framework.labels import TOPOLOGY_SCHEDULING_GATE
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    PodSetInfo,
    infos_from_admission,
    merge_into_template,
)
from integrations.pod import pod_fields as fields


def is_suspended(pod: Job) -> bool:
    """Held back by the admission gate, or terminated (upstream's podSuspended)."""
    return fields.is_terminated(pod) or fields.has_gate(pod)


def start_pod(
    pod: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> dict[str, Any]:
    """The Pod as it should be to run under `workload`'s admission.

    Raises `InvalidPodSetInfo` when the admission has not exactly one pod set or it
    conflicts with the Pod, `MissingFlavor` while a flavor is not cached yet."""
    if not fields.has_gate(pod):
        return copy.deepcopy(dict(pod))
    infos = infos_from_admission(workload, flavors)
    if len(infos) != 1:
        raise InvalidPodSetInfo(f"expecting 1 pod set, the admission has {len(infos)}")
    return ungated(pod, infos[0])


def ungated(pod: Job, info: PodSetInfo) -> dict[str, Any]:
    """The gated Pod with `info` merged in and the admission gate (and the topology gate,
    unless `info` keeps it) removed; raises `PodSetConflict` on a clash."""
    merged = merge_into_template(copy.deepcopy(dict(pod)), info)
    admission_gates = {str(g.get("name")) for g in info.scheduling_gates}
    drop = {fields.ADMISSION_GATE}
    if TOPOLOGY_SCHEDULING_GATE not in admission_gates:
        drop.add(TOPOLOGY_SCHEDULING_GATE)
    spec = merged.setdefault("spec", {})
    gates = [g for g in spec.get("schedulingGates") or () if g.get("name") not in drop]
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    return merged


def _terminating(pod: Job) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def plan_stop(pod: Job, message: str = "Stopped by Kueue") -> list[JobWrite]:
    """The status write marking a started Pod for termination (or nothing); the job
    controller deletes the Pod after it."""
    if not needs_stop(pod):
        return []
    after = marked_for_termination(pod, message)
    return [JobWrite(JobSubresource.STATUS, diff(pod, after), after)]


def needs_stop(pod: Job) -> bool:
    return not _terminating(pod) and not is_suspended(pod)


def marked_for_termination(pod: Job, message: str) -> dict[str, Any]:
    """The Pod with the `TerminationTarget` condition saying why it goes."""
    after: dict[str, Any] = copy.deepcopy(dict(pod))
    status = after.setdefault("status", {})
    conditions = [
        c
        for c in status.get("conditions") or ()
        if not (isinstance(c, Mapping) and c.get("type") == fields.TERMINATION_TARGET_CONDITION)
    ]
    conditions.append(
        {
            "type": fields.TERMINATION_TARGET_CONDITION,
            "status": "True",
            "reason": "StoppedByKueue",
            "message": message,
        }
    )
    status["conditions"] = conditions
    return after
