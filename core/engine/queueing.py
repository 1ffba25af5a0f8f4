"""Placing pending workloads: which queue, heap or inadmissible set, and wake-ups.

A pending workload lives in exactly one place: its ClusterQueue's heap, that queue's
inadmissible set, or parked with its LocalQueue (held queue, missing ClusterQueue) or
among the orphans (its LocalQueue does not exist). Workloads that reserve quota,
finished or inactive ones are in no queue.
"""

from __future__ import annotations

from core.api.workload_conditions import WorkloadReason
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.concurrent_admission import is_parent
from core.engine.node_matching import label_selector_matches
from core.engine.queue_order import queue_order_time
from core.engine.workload_state import QUOTA_RESERVED, REQUEUED, Where, WorkloadState

INADMISSIBLE = WorkloadReason.INADMISSIBLE.value


def backoff_expired(ws: WorkloadState, now: float) -> bool:
    """Upstream's backoffWaitingTimeExpired: Requeued=False blocks, requeueAt must pass."""
    if ws.is_false(REQUEUED):
        return False
    return ws.requeue_at is None or now >= ws.requeue_at


def namespace_selected(state: ClusterState, cq: ClusterQueueState, ws: WorkloadState) -> bool:
    labels = state.namespace_labels(ws.spec.namespace) or {}
    return label_selector_matches(cq.spec.namespace_selector, labels)


def mark_pending(state: ClusterState, ws: WorkloadState, reason: str, message: str) -> None:
    """QuotaReserved=False with a reason (clears admission, syncs Admitted)."""
    now = state.now()
    changed = ws.set_condition(QUOTA_RESERVED, False, reason, message, now)
    if ws.admission is not None:
        ws.admission = None
        changed = True
    if ws.sync_admitted(now):
        changed = True
    if changed:
        state.dirty.add(ws.key)


def dequeue(state: ClusterState, ws: WorkloadState) -> None:
    """Take ws out of whatever queue holds it."""
    where = ws.where
    if where == Where.NOWHERE:
        return
    if where in (Where.HEAP, Where.INADMISSIBLE):
        cq = state.cqs.get(ws.cluster_queue or "")
        if cq is not None:
            cq.queue.remove(ws.key)
    else:
        lq = state.lqs.get(ws.lq_key)
        if lq is not None:
            lq.parked.pop(ws.key, None)
        orphans = state.orphans.get(ws.lq_key)
        if orphans is not None:
            orphans.pop(ws.key, None)
            if not orphans:
                del state.orphans[ws.lq_key]
    ws.where = Where.NOWHERE


def is_queueable(ws: WorkloadState) -> bool:
    return (
        ws.active
        and not ws.is_finished
        and not ws.has_quota_reservation
        and not ws.is_on_hold
        and not ws.is_waiting_for_replacement_pods
    )


def enqueue(state: ClusterState, ws: WorkloadState) -> None:
    """(Re)place a pending workload, as upstream's AddOrUpdateWorkload does."""
    dequeue(state, ws)
    if not is_queueable(ws):
        return
    lq = state.lqs.get(ws.lq_key)
    if lq is None:
        state.orphans.setdefault(ws.lq_key, {})[ws.key] = ws
        ws.where = Where.PARKED
        mark_pending(state, ws, INADMISSIBLE, f"LocalQueue {ws.spec.queue_name} doesn't exist")
        return
    cq = state.cqs.get(lq.spec.cluster_queue)
    if lq.held or cq is None:
        lq.parked[ws.key] = ws
        ws.where = Where.PARKED
        if lq.held:
            mark_pending(state, ws, INADMISSIBLE, f"LocalQueue {ws.spec.queue_name} is inactive")
        else:
            mark_pending(
                state, ws, INADMISSIBLE, f"ClusterQueue {lq.spec.cluster_queue} doesn't exist"
            )
        return
    ws.cluster_queue = cq.name
    ws.queue_time = queue_order_time(ws, state.config)
    if is_parent(state, cq, ws):
        return  # its variants queue instead (`concurrent_admission`)
    if not cq.active:
        mark_pending(state, ws, INADMISSIBLE, f"ClusterQueue {cq.name} is inactive")
    if backoff_expired(ws, state.now()):
        cq.queue.push(ws)
    else:
        cq.queue.park(ws)


def _flush(state: ClusterState, names: list[str]) -> int:
    now = state.now()
    moved = 0
    for name in names:
        member = state.cqs[name]

        def may_enter(ws: WorkloadState, member: ClusterQueueState = member) -> bool:
            return namespace_selected(state, member, ws) and backoff_expired(ws, now)

        moved += member.queue.flush(may_enter)
    return moved


def flush_inadmissible(state: ClusterState, cq: ClusterQueueState) -> int:
    """Give every parked workload of cq's cohort tree another chance.

    Queues of the tree with nothing parked and no pop since their last flush are skipped:
    flushing them would change nothing.
    """
    return _flush(state, state.queues.wanting_flush(state.flush_group(cq)))


def flush_all(state: ClusterState) -> None:
    """Flush every ClusterQueue (cluster-wide changes: flavors, checks, namespaces)."""
    _flush(state, state.queues.all_wanting_flush())
