"""The status writes MultiKueue makes, each a pure `compute(current) -> patch | None`.

Every write to a Workload status goes through `core.kube.status_writer.write_status`:
guarded by the resourceVersion it was computed on, and recomputed on a fresh read after a
conflict. So each change re-checks, on the object it is about to modify, that it still
applies (the check is still Pending, the workload still holds its reservation, the
clusterName is still unset or the same...) and returns None when it does not or when it
is already in place. That is what makes a decision taken on a stale cache harmless:
it either still holds on the fresh object or it is dropped.

`admissionChecks` and `conditions` are lists, which a merge patch replaces whole; every
change therefore sends the full list with one entry changed, and the resourceVersion
guard keeps any concurrent change to another entry from being lost.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from core.api.admission_check import CheckState
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.api.workload_conditions import WorkloadReason
from hub.multikueue.dispatch.workload_facts import (
    Json,
    cluster_name,
    find_check,
    has_quota_reservation,
    has_true,
    is_finished,
    metadata,
    nominated_cluster_names,
    status,
)

MAX_MESSAGE_LENGTH = 32 * 1024
StatusCompute = Callable[[Json], dict[str, Any] | None]


class ClusterNameConflict(RuntimeError):
    """The workload is placed on another cluster; clusterName can never be changed."""


def truncate(message: str) -> str:
    return (
        message if len(message) <= MAX_MESSAGE_LENGTH else message[: MAX_MESSAGE_LENGTH - 3] + "..."
    )


def admitted_message(cluster: str) -> str:
    return f'The workload was admitted on "{cluster}"'


def _checks_with(
    current: Json, check: str, state: CheckState, message: str, now: str
) -> list[dict[str, Any]]:
    out = []
    for entry in status(current).get("admissionChecks") or ():
        if not isinstance(entry, Mapping):
            continue
        item = dict(entry)
        if item.get("name") == check:
            item["state"] = state.value
            item["message"] = truncate(message)
            item["lastTransitionTime"] = now
        out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class Nominate:
    """Write `status.nominatedClusterNames` while the workload waits for a worker."""

    check: str
    names: tuple[str, ...]

    def __call__(self, current: Json) -> dict[str, Any] | None:
        fact = find_check(current, self.check)
        if fact is None or fact.state is not CheckState.PENDING:
            return None
        if cluster_name(current) or is_finished(current) or not has_quota_reservation(current):
            return None
        if has_true(current, Cond.EVICTED):
            return None
        if nominated_cluster_names(current) == self.names:
            return None
        return {"nominatedClusterNames": list(self.names) or None}


def topology_assigned_pod_sets(remote: Json) -> tuple[str, ...]:
    """Names of a remote Workload's pod sets that the worker gave a topology assignment."""
    admission = status(remote).get("admission") or {}
    return tuple(
        str(psa.get("name"))
        for psa in admission.get("podSetAssignments") or ()
        if isinstance(psa, Mapping) and psa.get("topologyAssignment")
    )


def _delayed_topology_made_ready(current: Json, assigned: Collection[str]) -> dict[str, Any] | None:
    """The manager's `status.admission` with each pod set the worker assigned a topology
    moved from `delayedTopologyRequest: Pending` to `Ready`; None when none waits.

    Upstream v0.19.2 does the same (the manager's admission keeps no topology of its own:
    the assignment lives on the worker that computed it)."""
    admission = status(current).get("admission")
    if not isinstance(admission, Mapping) or not assigned:
        return None
    changed = False
    assignments = []
    for psa in admission.get("podSetAssignments") or ():
        item = dict(psa) if isinstance(psa, Mapping) else psa
        if (
            isinstance(item, dict)
            and item.get("name") in assigned
            and item.get("delayedTopologyRequest") == "Pending"
        ):
            item["delayedTopologyRequest"] = "Ready"
            changed = True
        assignments.append(item)
    return {**admission, "podSetAssignments": assignments} if changed else None


@dataclass(frozen=True, slots=True)
class MarkAdmitted:
    """Check Ready, clusterName set, nomination cleared: one write (upstream's step 5);
    in it, the manager's delayed topology requests the worker answered turn Ready."""

    check: str
    cluster: str
    now: str
    topology_assigned: tuple[str, ...] = ()
    """Pod sets the admitting worker gave a topology assignment (`topology_assigned_pod_sets`)."""

    def __call__(self, current: Json) -> dict[str, Any] | None:
        fact = find_check(current, self.check)
        if fact is None or fact.state not in (CheckState.PENDING, CheckState.READY):
            return None
        if is_finished(current) or not has_quota_reservation(current):
            return None
        placed = cluster_name(current)
        if placed is not None and placed != self.cluster:
            raise ClusterNameConflict(
                f"workload is placed on {placed!r}; cannot place it on {self.cluster!r}"
            )
        message = admitted_message(self.cluster)
        admission = _delayed_topology_made_ready(current, self.topology_assigned)
        if (
            fact.state is CheckState.READY
            and placed == self.cluster
            and fact.message == message
            and not nominated_cluster_names(current)
            and admission is None
        ):
            return None
        patch: dict[str, Any] = {
            "admissionChecks": _checks_with(
                current, self.check, CheckState.READY, message, self.now
            ),
            "clusterName": self.cluster,
            "nominatedClusterNames": None,
        }
        if admission is not None:
            patch["admission"] = admission
        return patch


@dataclass(frozen=True, slots=True)
class SetCheckState:
    """Move the MultiKueue check to Retry or Rejected, from one of `from_states` only."""

    check: str
    state: CheckState
    message: str
    now: str
    from_states: Collection[CheckState] = (CheckState.PENDING, CheckState.READY)
    placed_on: str | None = None
    """If set, only while the workload is still placed on this cluster."""

    def __call__(self, current: Json) -> dict[str, Any] | None:
        fact = find_check(current, self.check)
        if fact is None or fact.state not in self.from_states or fact.state is self.state:
            return None
        if is_finished(current):
            return None
        if self.placed_on is not None and cluster_name(current) != self.placed_on:
            return None
        return {
            "admissionChecks": _checks_with(current, self.check, self.state, self.message, self.now)
        }


@dataclass(frozen=True, slots=True)
class Finish:
    """Finished=True with the worker's reason and message (upstream's step 8)."""

    reason: str
    message: str
    now: str

    def __call__(self, current: Json) -> dict[str, Any] | None:
        if is_finished(current):
            return None
        conditions = [
            dict(c)
            for c in status(current).get("conditions") or ()
            if isinstance(c, Mapping) and c.get("type") != Cond.FINISHED
        ]
        conditions.append(
            {
                "type": Cond.FINISHED.value,
                "status": "True",
                "reason": self.reason or WorkloadReason.SUCCEEDED.value,
                "message": truncate(self.message),
                "lastTransitionTime": self.now,
                "observedGeneration": metadata(current).get("generation") or 0,
            }
        )
        return {"conditions": conditions}


@dataclass(frozen=True, slots=True)
class ClearPlacement:
    """Forget clusterName and nominations once the workload lost its reservation.

    Upstream resets both as part of the eviction; fleetq's engine leaves these fields to
    MultiKueue, so the dispatch clears them, only after every remote copy is gone and
    only while the workload holds no reservation (a finished workload keeps its
    clusterName as a record of where it ran).
    """

    def __call__(self, current: Json) -> dict[str, Any] | None:
        if is_finished(current) or has_quota_reservation(current):
            return None
        if not cluster_name(current) and not nominated_cluster_names(current):
            return None
        return {"clusterName": None, "nominatedClusterNames": None}


@dataclass(frozen=True, slots=True)
class ForgetPlacement:
    """Clear a clusterName left from an earlier admission cycle while the check is Pending.

    clusterName is set only together with Ready, so a Pending check beside it means the
    workload was evicted and reserved quota again before MultiKueue saw it lose the
    reservation; the placement must go or no dispatcher would ever run for it.
    """

    check: str
    cluster: str

    def __call__(self, current: Json) -> dict[str, Any] | None:
        fact = find_check(current, self.check)
        if fact is None or fact.state is not CheckState.PENDING or is_finished(current):
            return None
        if cluster_name(current) != self.cluster:
            return None
        return {"clusterName": None, "nominatedClusterNames": None}


@dataclass(frozen=True, slots=True)
class DeactivateRemote:
    """DeactivationTarget on a worker's copy: the manager evicted the workload."""

    message: str
    now: str

    def __call__(self, current: Json) -> dict[str, Any] | None:
        if has_true(current, Cond.DEACTIVATION_TARGET):
            return None
        conditions = [
            dict(c)
            for c in status(current).get("conditions") or ()
            if isinstance(c, Mapping) and c.get("type") != Cond.DEACTIVATION_TARGET
        ]
        conditions.append(
            {
                "type": Cond.DEACTIVATION_TARGET.value,
                "status": "True",
                "reason": WorkloadReason.EVICTED_ON_MANAGER_CLUSTER.value,
                "message": truncate(self.message),
                "lastTransitionTime": self.now,
                "observedGeneration": metadata(current).get("generation") or 0,
            }
        )
        return {"conditions": conditions}
