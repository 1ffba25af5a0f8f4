"""Whether a Workload runs on a MultiKueue worker rather than on this cluster.

A kind without managedBy (Pods, and the Pods of pod groups, StatefulSets and
LeaderWorkerSets: `framework.multikueue_kinds.StaysGatedWhenDispatched`) cannot tell the
manager's controllers to stay away; upstream's rule is that such a job is never started
locally while its Workload carries a MultiKueue admission check: its Pods stay gated here
and run on the worker the check dispatches them to. A check is known as MultiKueue's by
its AdmissionCheck's controller name, read from the AdmissionCheck cache.

On a worker the other way round: a Workload carrying the MultiKueue origin label is a
manager's copy, the manager's to remove. A pod group's copy arrives before its Pods (they
are created once the copy is admitted), so a worker must never take it for the Workload
of a group that is gone.
"""

from __future__ import annotations

from typing import Any

from core.api.json_types import Json
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME, MULTIKUEUE_ORIGIN_LABEL
from core.kube.object_store import ObjectStore


def check_names(workload: Json) -> list[str]:
    """The names of the admission checks a Workload's status lists."""
    status = workload.get("status") or {}
    return [str(c.get("name") or "") for c in status.get("admissionChecks") or () if c]


def runs_on_a_worker(workload: Json, admission_checks: ObjectStore[dict[str, Any]] | None) -> bool:
    """Whether one of the Workload's admission checks is a MultiKueue check (no cache of
    AdmissionChecks: never)."""
    if admission_checks is None:
        return False
    for name in check_names(workload):
        check = admission_checks.get(name)
        spec = (check or {}).get("spec") or {}
        if spec.get("controllerName") == MULTIKUEUE_CONTROLLER_NAME:
            return True
    return False


def is_dispatched_copy(workload: Json) -> bool:
    """Whether a Workload is a MultiKueue manager's copy on this worker (its origin label)."""
    labels = (workload.get("metadata") or {}).get("labels") or {}
    return MULTIKUEUE_ORIGIN_LABEL in labels
