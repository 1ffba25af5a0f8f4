"""Metrics and Events for what a written Workload status changed, counted once each.

They are recorded when a status write has landed, from the status before and after it:
a decision lost to a Conflict is never counted, and a decision re-made after a restart
is not counted twice, since the status before already shows it. Names, labels and event
messages follow upstream's (`kueue_quota_reserved_workloads_total`, "Quota reserved in
ClusterQueue X, wait time since queued was Ns", ...).
"""

from __future__ import annotations

from core.adapters.kueue_manifests import parse_time
from core.api.json_types import Json
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.kube.events import EventRecorder
from core.manager import watched_kinds as kinds
from core.manager.event_reasons import EventReason, evicted_reason, reference
from core.manager.metrics import LocalQueueRef, ManagerMetrics
from core.manager.workload_decisions import condition_of, condition_true


def _became_true(before: Json, after: Json, type_: str) -> bool:
    return condition_true(after, type_) and not condition_true(before, type_)


def _time_of(condition: Json | None) -> float | None:
    if condition is None or not condition.get("lastTransitionTime"):
        return None
    return parse_time(condition["lastTransitionTime"])


def priority_class_name(workload: Json) -> str:
    ref = (workload.get("spec") or {}).get("priorityClassRef") or {}
    return str(ref.get("name") or "")


def local_queue_of(workload: Json) -> LocalQueueRef | None:
    queue = (workload.get("spec") or {}).get("queueName")
    namespace = (workload.get("metadata") or {}).get("namespace")
    return LocalQueueRef(str(namespace), str(queue)) if queue and namespace else None


def queued_since(workload: Json, status: Json) -> float:
    """Creation, or the last time it went back to its queue (upstream's QueuedWaitTime)."""
    created = parse_time((workload.get("metadata") or {}).get("creationTimestamp"))
    requeued = condition_of(status, Cond.REQUEUED)
    if requeued is not None and requeued.get("status") == "True":
        return max(created, _time_of(requeued) or created)
    return created


def split_eviction_reason(reason: str) -> tuple[str, str]:
    """`DeactivatedDueToX` → (`Deactivated`, `X`); other reasons have no underlying cause."""
    head, sep, cause = reason.partition("DueTo")
    return (head, cause) if sep else (reason, "")


class WorkloadTransitions:
    """Records the consequences of one landed status write (see module docstring)."""

    def __init__(self, metrics: ManagerMetrics | None, events: EventRecorder | None) -> None:
        self.metrics = metrics
        self.events = events

    def record(self, workload: Json, before: Json, after: Json) -> None:
        admission = after.get("admission") or before.get("admission") or {}
        cluster_queue = str(admission.get("clusterQueue") or "")
        pc = priority_class_name(workload)
        lq = local_queue_of(workload)
        ref = reference(workload, kinds.WORKLOADS, "Workload")
        if _became_true(before, after, Cond.QUOTA_RESERVED):
            reserved_at = _time_of(condition_of(after, Cond.QUOTA_RESERVED)) or 0.0
            waited = max(0.0, reserved_at - queued_since(workload, before))
            if self.metrics is not None:
                self.metrics.quota_reserved(cluster_queue, pc, waited, lq)
            if self.events is not None:
                self.events.record(
                    ref,
                    EventReason.QUOTA_RESERVED,
                    f"Quota reserved in ClusterQueue {cluster_queue}, "
                    f"wait time since queued was {waited:.0f}s",
                )
        if _became_true(before, after, Cond.ADMITTED):
            admitted_at = _time_of(condition_of(after, Cond.ADMITTED)) or 0.0
            reserved_at = _time_of(condition_of(after, Cond.QUOTA_RESERVED)) or admitted_at
            waited = max(0.0, admitted_at - queued_since(workload, before))
            if self.metrics is not None:
                self.metrics.admitted(
                    cluster_queue, pc, waited, max(0.0, admitted_at - reserved_at), lq
                )
            if self.events is not None:
                self.events.record(
                    ref,
                    EventReason.ADMITTED,
                    f"Admitted by ClusterQueue {cluster_queue}, "
                    f"wait time since reservation was {admitted_at - reserved_at:.0f}s",
                )
        if _became_true(before, after, Cond.EVICTED):
            evicted = condition_of(after, Cond.EVICTED) or {}
            reason, cause = split_eviction_reason(str(evicted.get("reason") or ""))
            if self.metrics is not None:
                first = condition_of(before, Cond.EVICTED) is None
                self.metrics.evicted(cluster_queue, reason, cause, pc, lq, first=first)
            if self.events is not None:
                self.events.record(
                    ref, evicted_reason(reason, cause), str(evicted.get("message") or "")
                )
        if _became_true(before, after, Cond.PREEMPTED) and self.events is not None:
            preempted = condition_of(after, Cond.PREEMPTED) or {}
            self.events.record(ref, EventReason.PREEMPTED, str(preempted.get("message") or ""))
        if _became_true(before, after, Cond.FINISHED) and self.metrics is not None:
            finished_at = _time_of(condition_of(after, Cond.FINISHED)) or 0.0
            admitted_at = _time_of(condition_of(before, Cond.ADMITTED)) or finished_at
            self.metrics.finished(cluster_queue, pc, max(0.0, finished_at - admitted_at), lq)
