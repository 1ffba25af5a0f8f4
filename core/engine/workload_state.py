"""The engine's mutable record of one workload, and the condition rules upstream applies.

`WorkloadState` is internal: the engine mutates it in place and renders an immutable
`WorkloadStatus` only for workloads whose status changed. Condition updates follow
Kubernetes' `SetStatusCondition`: the transition time moves only when the status flips.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from core.api.admission_check import CheckState
from core.api.workload_conditions import WorkloadConditionType, WorkloadReason
from core.engine.model import (
    Admission,
    AdmissionCheckStatus,
    Condition,
    RequeueState,
    Workload,
    WorkloadStatus,
)
from core.engine.quota_tree import FlavorResource
from core.engine.topology_state import TasUsage

QUOTA_RESERVED = WorkloadConditionType.QUOTA_RESERVED.value
ADMITTED = WorkloadConditionType.ADMITTED.value
EVICTED = WorkloadConditionType.EVICTED.value
PREEMPTED = WorkloadConditionType.PREEMPTED.value
REQUEUED = WorkloadConditionType.REQUEUED.value
PODS_READY = WorkloadConditionType.PODS_READY.value
FINISHED = WorkloadConditionType.FINISHED.value
DEACTIVATION_TARGET = WorkloadConditionType.DEACTIVATION_TARGET.value
WAITING_FOR_REPLACEMENT_PODS = WorkloadConditionType.WAITING_FOR_REPLACEMENT_PODS.value


class Where(IntEnum):
    """Where a workload sits in the engine's bookkeeping."""

    NOWHERE = 0  # not queued: reserving quota, finished, inactive, or orphaned
    HEAP = 1  # in its ClusterQueue's heap, may be popped
    INADMISSIBLE = 2  # parked in its ClusterQueue until a flush
    PARKED = 3  # its LocalQueue / ClusterQueue is missing or held; not in any CQ


@dataclass(slots=True)
class PodSetCount:
    """Requests of one pod set as quota sees them: per pod, times `count`."""

    name: str
    count: int
    per_pod: dict[str, int]


@dataclass(slots=True)
class LastAssignment:
    """Where the flavor search stopped last time, so a retry resumes after it.

    `tried[i][resource]` is the index of the last flavor tried for pod set i, or -1
    when every flavor was tried. `generation` is the ClusterQueue's allocatable
    generation then; a newer one invalidates this record.
    """

    tried: list[dict[str, int]]
    generation: int

    def pending_flavors(self) -> bool:
        return any(idx != -1 for per_ps in self.tried for idx in per_ps.values())

    def next_flavor(self, pod_set: int, resource: str) -> int:
        if pod_set >= len(self.tried):
            return 0
        idx = self.tried[pod_set].get(resource)
        return 0 if idx is None else idx + 1


class WorkloadState:
    """Everything the engine tracks for one workload."""

    __slots__ = (
        "accumulated",
        "active",
        "admission",
        "admitted_at",
        "checks",
        "cluster_queue",
        "conditions",
        "evictions",
        "key",
        "last_assignment",
        "lq_key",
        "pod_sets",
        "priority",
        "queue_time",
        "reclaimable",
        "requests",
        "requeue_at",
        "requeue_count",
        "reserved_at",
        "spec",
        "tas_usage",
        "uid",
        "usage",
        "usage_cq",
        "where",
    )

    def __init__(self, spec: Workload) -> None:
        self.spec = spec
        self.key = spec.key
        self.uid = spec.uid
        self.priority = spec.priority
        self.lq_key = f"{spec.namespace}/{spec.queue_name}"
        self.active = spec.active
        self.cluster_queue: str | None = None
        self.conditions: dict[str, Condition] = {}
        self.admission: Admission | None = None
        # Quota charged in the tree (after reclaimable pods), and the CQ charged.
        self.usage: dict[FlavorResource, int] = {}
        self.usage_cq: str | None = None
        # What its topology assignments hold in leaf domains of TAS flavors (when charged).
        self.tas_usage: list[TasUsage] = []
        self.requeue_count = 0
        self.requeue_at: float | None = None
        self.checks: dict[str, AdmissionCheckStatus] = {}
        self.reclaimable: dict[str, int] = dict(spec.reclaimable_pods)
        self.accumulated = 0.0
        self.evictions: dict[str, int] = {}
        self.last_assignment: LastAssignment | None = None
        self.queue_time = spec.creation_time
        self.reserved_at: float | None = None
        self.admitted_at: float | None = None
        self.where = Where.NOWHERE
        # Per-pod requests of each pod set as quota counts them: the spec's, or those with
        # the namespace's LimitRange defaults and RuntimeClass overhead (set_requests).
        self.requests: list[dict[str, int]] = [dict(ps.requests) for ps in spec.pod_sets]
        self.pod_sets: list[PodSetCount] = []
        self.refresh_pod_sets()

    # -------------------------------------------------------------- requests
    def set_requests(self, requests: list[dict[str, int]]) -> bool:
        """New per-pod requests (one dict per pod set); True if they differ."""
        if requests == self.requests:
            return False
        self.requests = requests
        self.refresh_pod_sets()
        return True

    def refresh_pod_sets(self) -> None:
        """Recompute counted pod sets from requests and reclaimable pods."""
        if len(self.requests) != len(self.spec.pod_sets):
            # Pod sets replaced without a recount: fall back to the spec's own requests.
            self.requests = [dict(ps.requests) for ps in self.spec.pod_sets]
        out = []
        for ps, per_pod in zip(self.spec.pod_sets, self.requests, strict=True):
            count = ps.count - self.reclaimable.get(ps.name, 0)
            out.append(PodSetCount(ps.name, max(0, count), dict(per_pod)))
        self.pod_sets = out

    # -------------------------------------------------------------- conditions
    def cond(self, type_: str) -> Condition | None:
        return self.conditions.get(type_)

    def is_true(self, type_: str) -> bool:
        c = self.conditions.get(type_)
        return c is not None and c.status

    def is_false(self, type_: str) -> bool:
        c = self.conditions.get(type_)
        return c is not None and not c.status

    def set_condition(
        self, type_: str, status: bool, reason: str, message: str, now: float
    ) -> bool:
        """Kubernetes SetStatusCondition: returns True if anything changed."""
        old = self.conditions.get(type_)
        if old is None:
            self.conditions[type_] = Condition(
                type=type_,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=now,
            )
            return True
        if old.status == status and old.reason == reason and old.message == message:
            return False
        ltt = old.last_transition_time if old.status == status else now
        self.conditions[type_] = Condition(
            type=type_, status=status, reason=reason, message=message, last_transition_time=ltt
        )
        return True

    def remove_condition(self, type_: str) -> bool:
        return self.conditions.pop(type_, None) is not None

    def mark_reserved(self, message: str, now: float) -> None:
        """Quota reserved (the admission is set): QuotaReserved True, and a past eviction
        or preemption no longer current, as upstream's admission sets them."""
        self.reserved_at = now
        reason = WorkloadReason.QUOTA_RESERVED.value
        self.set_condition(QUOTA_RESERVED, True, reason, message, now)
        self.reset_active_condition(EVICTED, reason, now)
        self.reset_active_condition(PREEMPTED, reason, now)

    def reset_active_condition(self, type_: str, reason: str, now: float) -> bool:
        """Flip a True condition to False, keeping its message as 'Previously: …'."""
        old = self.conditions.get(type_)
        if old is None or not old.status:
            return False
        return self.set_condition(type_, False, reason, "Previously: " + old.message, now)

    # -------------------------------------------------------------- predicates
    @property
    def has_quota_reservation(self) -> bool:
        return self.is_true(QUOTA_RESERVED)

    @property
    def is_on_hold(self) -> bool:
        """Its owner holds it (a StatefulSet scaled to zero): no quota, not queued."""
        cond = self.conditions.get(QUOTA_RESERVED)
        return cond is not None and not cond.status and cond.reason == WorkloadReason.ON_HOLD

    @property
    def is_waiting_for_replacement_pods(self) -> bool:
        """Its pod group misses Pods: not queued until they are back (upstream's
        IsAdmissible)."""
        return self.is_true(WAITING_FOR_REPLACEMENT_PODS)

    @property
    def is_admitted(self) -> bool:
        return self.is_true(ADMITTED)

    @property
    def is_finished(self) -> bool:
        return self.is_true(FINISHED)

    @property
    def is_evicted(self) -> bool:
        return self.is_true(EVICTED)

    def all_checks_ready(self) -> bool:
        return all(c.state == CheckState.READY for c in self.checks.values())

    def has_retry_or_rejected_checks(self) -> bool:
        return any(c.state in (CheckState.RETRY, CheckState.REJECTED) for c in self.checks.values())

    def sync_admitted(self, now: float) -> bool:
        """Upstream's SyncAdmittedCondition, including accumulated execution time."""
        reserved = self.has_quota_reservation
        checks_ready = self.all_checks_ready()
        admitted = self.is_admitted
        if admitted == (reserved and checks_ready):
            return False
        if reserved and checks_ready:
            status, reason, msg = True, WorkloadReason.ADMITTED.value, "The workload is admitted"
        elif not reserved and not checks_ready:
            status, reason = False, "NoReservationUnsatisfiedChecks"
            msg = "The workload has no reservation and not all checks ready"
        elif not reserved:
            status, reason = False, WorkloadReason.NO_RESERVATION.value
            msg = "The workload has no reservation"
        else:
            status, reason = False, "UnsatisfiedChecks"
            msg = "The workload has not all checks ready"
        if admitted and not status:
            old = self.conditions[ADMITTED]
            self.accumulated += float(int(now - old.last_transition_time))
        changed = self.set_condition(ADMITTED, status, reason, msg, now)
        self.admitted_at = now if status else None
        return changed

    # -------------------------------------------------------------- rendering
    def status(self) -> WorkloadStatus:
        requeue = None
        if self.requeue_count or self.requeue_at is not None:
            requeue = RequeueState(count=self.requeue_count, requeue_at=self.requeue_at)
        return WorkloadStatus(
            conditions=tuple(self.conditions.values()),
            admission=self.admission,
            requeue_state=requeue,
            admission_checks=tuple(self.checks[name] for name in sorted(self.checks)),
            reclaimable_pods=dict(self.reclaimable),
            accumulated_past_execution_time_seconds=self.accumulated,
            evictions=dict(self.evictions),
            active=self.active,
        )


def eviction_key(reason: str, cause: str = "") -> str:
    """Key of a schedulingStats.evictions entry: reason, plus '/cause' when there is one."""
    return f"{reason}/{cause}" if cause else reason
