"""What happens to a workload after the scheduler reserved quota for it.

Upstream spreads these steps over the workload controller, the job reconciler and the
admission-check controllers; the engine applies each step's outcome at once, with the
same conditions, reasons and messages:

- reservation: QuotaReserved=True, admission checks set Pending, Admitted=True once all
  checks are Ready;
- eviction: Evicted=True (and Preempted=True for victims); once the job is stopped the
  quota is released: QuotaReserved=False `Pending`, Admitted=False `NoReservation`,
  Requeued=True (preemption, node failures) or False with the eviction reason;
- Requeued=False ends with a backoff (PodsReady timeout, admission-check retry) or on an
  explicit restart (reactivation, ClusterQueue/LocalQueue restarted);
- timers: PodsReady timeout / recovery timeout evict with `PodsReadyTimeout` (or
  deactivate past `backoffLimitCount`); maximumExecutionTimeSeconds deactivates.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.api.admission_check import CheckState
from core.api.workload_conditions import WorkloadReason
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.concurrent_admission import is_variant
from core.engine.model import Admission, AdmissionCheckStatus
from core.engine.queueing import dequeue, enqueue, flush_inadmissible, mark_pending
from core.engine.quota_tree import FlavorResource, add_usages, remove_usages
from core.engine.timers import TimerKind, Timers
from core.engine.topology_state import TasUsage, tas_usage_of
from core.engine.workload_state import (
    ADMITTED,
    DEACTIVATION_TARGET,
    EVICTED,
    FINISHED,
    PODS_READY,
    PREEMPTED,
    REQUEUED,
    WAITING_FOR_REPLACEMENT_PODS,
    WorkloadState,
    eviction_key,
)

NOT_READY_MSG = "Not all pods are ready or succeeded"
RECOVERY_MSG = "At least one pod has failed, waiting for recovery"
READY_MSG = "All pods reached readiness and the workload is running"
REPLACEMENT_NEEDED_MSG = "Some Failed pods need replacement"
NO_REPLACEMENT_NEEDED_MSG = "No pods need replacement"

_REQUEUED_TRUE_ON = (WorkloadReason.PREEMPTED.value, WorkloadReason.NODE_FAILURES.value)
_BACKOFF_REASONS = (WorkloadReason.PODS_READY_TIMEOUT.value, WorkloadReason.ADMISSION_CHECK.value)


def usage_from_admission(ws: WorkloadState) -> dict[FlavorResource, int]:
    """Quota a reserving workload holds: its admission, scaled down by reclaimable pods."""
    admission = ws.admission
    if admission is None:
        return {}
    counts = {ps.name: ps.count for ps in ws.pod_sets}
    usage: dict[FlavorResource, int] = {}
    for psa in admission.pod_set_assignments:
        after_reclaim = counts.get(psa.name, psa.count)
        for res, total in psa.resource_usage.items():
            flavor = psa.flavors.get(res)
            # A negative total (written by someone else) never lowers usage.
            if flavor is None or total <= 0:
                continue
            if after_reclaim < psa.count and psa.count > 0:
                total = total // psa.count * after_reclaim
            fr = (flavor, res)
            usage[fr] = usage.get(fr, 0) + total
    return usage


def tas_usage_from_admission(ws: WorkloadState, state: ClusterState) -> list[TasUsage]:
    """What a workload's topology assignments hold in each leaf of its TAS flavor."""
    admission = ws.admission
    if admission is None:
        return []
    per_pod = {ps.name: ps.per_pod for ps in ws.pod_sets}
    out: list[TasUsage] = []
    for psa in admission.pod_set_assignments:
        assignment = psa.topology_assignment
        if assignment is None:
            continue
        tas = sorted(
            {
                f
                for f in psa.flavors.values()
                if (flavor := state.flavors.get(f)) is not None and flavor.topology_name
            }
        )
        if len(tas) == 1:
            out.extend(tas_usage_of(tas[0], assignment, per_pod.get(psa.name, {})))
    return out


def applicable_checks(cq: ClusterQueueState, admission: Admission | None) -> list[str]:
    """Admission checks of cq that apply to a workload with this admission."""
    if not cq.admission_checks:
        return []
    if all(not flavors for flavors in cq.admission_checks.values()):
        return sorted(cq.admission_checks)
    if admission is None:
        return []
    assigned = {f for psa in admission.pod_set_assignments for f in psa.flavors.values()}
    return sorted(
        name for name, flavors in cq.admission_checks.items() if not flavors or assigned & flavors
    )


class Lifecycle:
    __slots__ = ("not_ready", "state", "timers")

    def __init__(self, state: ClusterState, timers: Timers) -> None:
        self.state = state
        self.timers = timers
        # Admitted, unfinished workloads whose pods are not all ready (blockAdmission).
        self.not_ready: set[str] = set()

    # ------------------------------------------------------------ accounting
    def charge(self, ws: WorkloadState, cq: ClusterQueueState) -> None:
        usage = usage_from_admission(ws)
        add_usages(cq.node, usage)
        self.state.verdicts_may_change(cq)
        ws.usage = usage
        ws.usage_cq = cq.name
        ws.tas_usage = tas_usage_from_admission(ws, self.state)
        self.state.topology.add_usage(ws.tas_usage)
        cq.reserving[ws.key] = ws

    def release(self, ws: WorkloadState) -> ClusterQueueState | None:
        """Give back ws's quota; returns the ClusterQueue it was charged to."""
        cq = self.state.cqs.get(ws.usage_cq or "")
        self.state.verdicts_may_change(cq)
        if cq is not None and ws.key in cq.reserving:
            remove_usages(cq.node, ws.usage)
            del cq.reserving[ws.key]
            cq.generation += 1
        if ws.tas_usage:
            self.state.topology.remove_usage(ws.tas_usage)
            self._wake_topology_sharers(cq, {u.flavor for u in ws.tas_usage})
        ws.tas_usage = []
        ws.usage = {}
        ws.usage_cq = None
        self.not_ready.discard(ws.key)
        return cq

    def _wake_topology_sharers(self, owner: ClusterQueueState | None, flavors: set[str]) -> None:
        """Freed node capacity helps every ClusterQueue placing pods in those flavors, not
        only the owner's cohort."""
        for cq in self.state.cqs.values():
            if cq is not owner and flavors.intersection(cq.tas_flavors):
                cq.generation += 1
                flush_inadmissible(self.state, cq)

    def recharge(self, ws: WorkloadState) -> None:
        """Recompute a reserving workload's usage (reclaimable pods changed)."""
        cq = self.state.cqs.get(ws.usage_cq or "")
        if cq is None:
            return
        remove_usages(cq.node, ws.usage)
        ws.usage = usage_from_admission(ws)
        add_usages(cq.node, ws.usage)
        self.state.verdicts_may_change(cq)
        cq.generation += 1

    # ------------------------------------------------------------ reservation
    def reserve(self, ws: WorkloadState, cq: ClusterQueueState, admission: Admission) -> None:
        state = self.state
        now = state.now()
        ws.admission = admission
        ws.cluster_queue = cq.name
        self.charge(ws, cq)
        ws.mark_reserved(f"Quota reserved in ClusterQueue {cq.name}", now)
        self._sync_checks(ws, cq)
        self.admit_if_ready(ws)
        if cq.queue.sticky == ws.key:
            cq.queue.sticky = None
        state.dirty.add(ws.key)

    def admit_if_ready(self, ws: WorkloadState) -> None:
        """Admitted follows quota reservation and the checks (upstream's
        SyncAdmittedCondition); a workload that just became admitted starts its timers."""
        was_admitted = ws.is_admitted
        if ws.sync_admitted(self.state.now()):
            self.state.dirty.add(ws.key)
            if ws.is_admitted and not was_admitted:
                self._on_admitted(ws)

    def _sync_checks(self, ws: WorkloadState, cq: ClusterQueueState) -> None:
        now = self.state.now()
        wanted = applicable_checks(cq, ws.admission)
        for name in list(ws.checks):
            if name not in wanted:
                del ws.checks[name]
        for name in wanted:
            if name not in ws.checks:
                ws.checks[name] = AdmissionCheckStatus(
                    name=name, state=CheckState.PENDING, last_transition_time=now
                )

    def _on_admitted(self, ws: WorkloadState) -> None:
        state = self.state
        now = state.now()
        ws.admitted_at = now
        wfpr = state.config.wait_for_pods_ready
        # A variant runs no pods of its own: its parent's PodsReady is the one waited for.
        if wfpr is not None and not is_variant(state, ws):
            cond = ws.conditions.get(PODS_READY)
            if cond is None or not cond.status:
                ws.set_condition(
                    PODS_READY, False, WorkloadReason.WAIT_FOR_START.value, NOT_READY_MSG, now
                )
                self.not_ready.add(ws.key)
                self.timers.add(now + wfpr.timeout_seconds, ws.key, TimerKind.PODS_READY)
        limit = ws.spec.maximum_execution_time_seconds
        if limit is not None:
            self.timers.add(now + limit - ws.accumulated, ws.key, TimerKind.MAX_EXECUTION)

    def adopt_admitted(self, ws: WorkloadState) -> None:
        """Re-arm timers for a workload that was already admitted before the engine started."""
        if (
            self.state.config.wait_for_pods_ready is not None
            and not ws.is_true(PODS_READY)
            and not is_variant(self.state, ws)
        ):
            self.not_ready.add(ws.key)
            deadline = self.pods_ready_deadline(ws)
            if deadline is not None:
                self.timers.add(deadline, ws.key, TimerKind.PODS_READY)
        deadline = self.max_execution_deadline(ws)
        if deadline is not None:
            self.timers.add(deadline, ws.key, TimerKind.MAX_EXECUTION)

    def schedule_backoff(self, ws: WorkloadState) -> None:
        if ws.requeue_at is not None:
            self.timers.add(ws.requeue_at, ws.key, TimerKind.BACKOFF)

    # ------------------------------------------------------------ eviction
    def evict(
        self,
        ws: WorkloadState,
        reason: str,
        message: str,
        *,
        cause: str = "",
        preempted: tuple[WorkloadReason, str] | None = None,
        defer_release: bool = False,
    ) -> None:
        """Set Evicted=True; release the quota now unless the driver confirms it later."""
        state = self.state
        # An evicted workload is no victim to look for any more.
        state.verdicts_may_change(state.cqs.get(ws.usage_cq or ws.cluster_queue or ""))
        now = state.now()
        shown = reason
        if reason == WorkloadReason.DEACTIVATED and cause:
            shown = f"{reason}DueTo{cause}"
        ws.set_condition(EVICTED, True, shown, message, now)
        if preempted is not None:
            ws.set_condition(PREEMPTED, True, preempted[0].value, preempted[1], now)
        self._reset_checks_on_eviction(ws)
        k = eviction_key(reason, cause)
        ws.evictions[k] = ws.evictions.get(k, 0) + 1
        state.dirty.add(ws.key)
        if state.config.release_quota_on_eviction and not defer_release:
            self.complete_eviction(ws)

    def _reset_checks_on_eviction(self, ws: WorkloadState) -> None:
        now = self.state.now()
        for name, check in list(ws.checks.items()):
            if check.state == CheckState.PENDING:
                continue
            retry = check.retry_count + (1 if check.state == CheckState.RETRY else 0)
            ws.checks[name] = AdmissionCheckStatus(
                name=name,
                state=CheckState.PENDING,
                message=f"Reset to Pending after eviction. Previously: {check.state.value}",
                last_transition_time=now,
                retry_count=retry,
                requeue_after_seconds=check.requeue_after_seconds,
            )

    def complete_eviction(self, ws: WorkloadState) -> None:
        """The job is stopped: release quota and requeue (upstream's job reconciler step)."""
        state = self.state
        ev = ws.conditions.get(EVICTED)
        if ev is None or not ev.status:
            return
        now = state.now()
        cq = None
        if ws.has_quota_reservation or ws.usage_cq is not None:
            ws.set_condition(REQUEUED, ev.reason in _REQUEUED_TRUE_ON, ev.reason, ev.message, now)
            cq = self.release(ws)
            mark_pending(state, ws, WorkloadReason.PENDING.value, ev.message)
            if state.config.wait_for_pods_ready is not None:
                ws.set_condition(
                    PODS_READY, False, WorkloadReason.WAIT_FOR_START.value, NOT_READY_MSG, now
                )
            state.dirty.add(ws.key)
        self._maybe_finish_backoff(ws)
        if cq is not None:
            flush_inadmissible(state, cq)
        enqueue(state, ws)

    def _maybe_finish_backoff(self, ws: WorkloadState) -> None:
        cond = ws.conditions.get(REQUEUED)
        if cond is None or cond.status or cond.reason not in _BACKOFF_REASONS or not ws.active:
            return
        now = self.state.now()
        if ws.requeue_at is not None and ws.requeue_at > now:
            self.timers.add(ws.requeue_at, ws.key, TimerKind.BACKOFF)
            return
        ws.requeue_at = None
        ws.set_condition(
            REQUEUED,
            True,
            WorkloadReason.BACKOFF_FINISHED.value,
            "The workload backoff was finished",
            now,
        )
        self.state.dirty.add(ws.key)

    # ------------------------------------------------------------ finish / delete
    def finish(
        self,
        ws: WorkloadState,
        succeeded: bool,
        message: str,
        reason: WorkloadReason | None = None,
    ) -> None:
        """Finished=True; `reason` overrides Succeeded/Failed (upstream: FailedToStart)."""
        if ws.is_finished:
            return
        state = self.state
        if reason is None:
            reason = WorkloadReason.SUCCEEDED if succeeded else WorkloadReason.FAILED
        if not message:
            message = "Job finished successfully" if succeeded else "Job failed"
        ws.set_condition(FINISHED, True, reason.value, message, state.now())
        state.dirty.add(ws.key)
        dequeue(state, ws)
        cq = self.release(ws) if ws.usage_cq is not None else None
        if cq is not None:
            flush_inadmissible(state, cq)

    def forget(self, ws: WorkloadState) -> None:
        """The Workload object is gone."""
        state = self.state
        dequeue(state, ws)
        for waiting in state.awaiting_cq.values():
            waiting.pop(ws.key, None)
        cq = self.release(ws) if ws.usage_cq is not None else None
        if cq is not None:
            flush_inadmissible(state, cq)
        for other in state.cqs.values():
            if other.queue.sticky == ws.key:
                other.queue.sticky = None

    # ------------------------------------------------------------ (de)activation
    def deactivate(self, ws: WorkloadState) -> None:
        state = self.state
        if not ws.active and ws.is_evicted and not ws.is_true(DEACTIVATION_TARGET):
            return
        ws.active = False
        state.dirty.add(ws.key)
        target = ws.conditions.get(DEACTIVATION_TARGET)
        cause, message = "", "The workload is deactivated"
        if target is not None and target.status:
            cause = target.reason
            message = f"{message} due to {target.message}"
        ws.remove_condition(DEACTIVATION_TARGET)
        ws.requeue_at = None
        ws.requeue_count = 0
        dequeue(state, ws)
        if not ws.is_evicted:
            self.evict(ws, WorkloadReason.DEACTIVATED.value, message, cause=cause)
        elif state.config.release_quota_on_eviction:
            self.complete_eviction(ws)

    def set_deactivation_target(self, ws: WorkloadState, reason: str, message: str) -> None:
        ws.set_condition(DEACTIVATION_TARGET, True, reason, message, self.state.now())
        self.state.dirty.add(ws.key)
        self.deactivate(ws)

    def reactivate(self, ws: WorkloadState) -> None:
        if ws.active:
            return
        state = self.state
        ws.active = True
        cond = ws.conditions.get(REQUEUED)
        if cond is not None and not cond.status and cond.reason.startswith("Deactivated"):
            ws.set_condition(
                REQUEUED,
                True,
                WorkloadReason.REACTIVATED.value,
                "The workload was reactivated",
                state.now(),
            )
        state.dirty.add(ws.key)
        enqueue(state, ws)

    def hold(self, ws: WorkloadState, message: str) -> None:
        """Its owner needs no Pods for now (a StatefulSet scaled to zero): give the quota
        back and keep it out of the queues, QuotaReserved=False `OnHold`. Only a workload
        reserving quota is held, as upstream."""
        if ws.is_finished or not ws.active or not ws.has_quota_reservation:
            return
        cq = self.release(ws)
        dequeue(self.state, ws)
        mark_pending(self.state, ws, WorkloadReason.ON_HOLD.value, message)
        self.state.dirty.add(ws.key)
        if cq is not None:
            flush_inadmissible(self.state, cq)

    def release_hold(self, ws: WorkloadState) -> None:
        """Its owner wants Pods again: pending, and queued as any other workload."""
        if not ws.is_on_hold:
            return
        mark_pending(
            self.state,
            ws,
            WorkloadReason.PENDING.value,
            "Workload no longer on hold; waiting for quota reservation",
        )
        enqueue(self.state, ws)

    def restart_requeue(
        self, ws: WorkloadState, stopped_reason: str, reason: str, message: str
    ) -> None:
        """A stopped queue runs again: lift Requeued=False set by its drain."""
        cond = ws.conditions.get(REQUEUED)
        if cond is not None and not cond.status and cond.reason == stopped_reason:
            ws.set_condition(REQUEUED, True, reason, message, self.state.now())
            self.state.dirty.add(ws.key)

    # ------------------------------------------------------------ replacement pods
    def set_waiting_for_replacement_pods(self, ws: WorkloadState, waiting: bool) -> None:
        """A pod group's Pods are missing (`waiting`) or all there again, upstream's
        WaitingForReplacementPods: True says `PodsFailed`, or the Evicted reason and
        message while the workload is evicted; it keeps the workload out of the queues
        (an admitted one keeps its quota). False once none is missing (`PodsReady`), and
        the workload queues again if it may."""
        state = self.state
        cond = ws.conditions.get(WAITING_FOR_REPLACEMENT_PODS)
        if waiting:
            evicted = ws.conditions.get(EVICTED)
            if evicted is not None and evicted.status:
                reason, message = evicted.reason, evicted.message
            elif cond is not None and cond.status:
                reason, message = cond.reason, cond.message
            else:
                reason, message = WorkloadReason.PODS_FAILED.value, REPLACEMENT_NEEDED_MSG
            if ws.set_condition(WAITING_FOR_REPLACEMENT_PODS, True, reason, message, state.now()):
                state.dirty.add(ws.key)
                dequeue(state, ws)
            return
        if cond is None or not cond.status:
            return
        ws.set_condition(
            WAITING_FOR_REPLACEMENT_PODS,
            False,
            WorkloadReason.PODS_READY.value,
            NO_REPLACEMENT_NEEDED_MSG,
            state.now(),
        )
        state.dirty.add(ws.key)
        enqueue(state, ws)

    # ------------------------------------------------------------ pods ready
    def set_pods_ready(self, ws: WorkloadState, ready: bool) -> None:
        state = self.state
        now = state.now()
        cond = ws.conditions.get(PODS_READY)
        if ready:
            reason = WorkloadReason.STARTED.value
            if cond is not None and cond.reason in (
                WorkloadReason.WAIT_FOR_RECOVERY.value,
                WorkloadReason.RECOVERED.value,
            ):
                reason = WorkloadReason.RECOVERED.value
            changed = ws.set_condition(PODS_READY, True, reason, READY_MSG, now)
            self.not_ready.discard(ws.key)
        elif cond is None or (not cond.status and not ws.is_admitted):
            changed = ws.set_condition(
                PODS_READY, False, WorkloadReason.WAIT_FOR_START.value, NOT_READY_MSG, now
            )
        elif cond.status:
            changed = ws.set_condition(
                PODS_READY, False, WorkloadReason.WAIT_FOR_RECOVERY.value, RECOVERY_MSG, now
            )
            wfpr = state.config.wait_for_pods_ready
            if wfpr is not None and wfpr.effective_recovery_timeout > 0:
                self.timers.add(now + wfpr.effective_recovery_timeout, ws.key, TimerKind.PODS_READY)
            if ws.is_admitted:
                self.not_ready.add(ws.key)
        else:
            changed = False
        if changed:
            state.dirty.add(ws.key)

    # ------------------------------------------------------------ admission checks
    def set_check(
        self,
        ws: WorkloadState,
        name: str,
        check_state: CheckState,
        message: str,
        requeue_after: float | None,
        pod_set_updates: tuple[Mapping[str, object], ...] = (),
    ) -> None:
        state = self.state
        now = state.now()
        old = ws.checks.get(name)
        ltt = now if old is None or old.state != check_state else old.last_transition_time
        ws.checks[name] = AdmissionCheckStatus(
            name=name,
            state=check_state,
            message=message,
            last_transition_time=ltt,
            retry_count=old.retry_count if old is not None else 0,
            requeue_after_seconds=requeue_after,
            pod_set_updates=pod_set_updates,
        )
        state.dirty.add(ws.key)
        if check_state == CheckState.RETRY and requeue_after:
            at = ltt + requeue_after
            if at > now and (ws.requeue_at is None or ws.requeue_at < at):
                ws.requeue_at = at
        if not ws.has_quota_reservation or ws.is_evicted:
            return
        rejected = [c.name for c in ws.checks.values() if c.state == CheckState.REJECTED]
        if rejected:
            self.set_deactivation_target(
                ws,
                WorkloadReason.ADMISSION_CHECK.value,
                f"Admission check(s): {','.join(sorted(rejected))}, were rejected",
            )
            return
        if any(c.state == CheckState.RETRY for c in ws.checks.values()):
            self.evict(
                ws, WorkloadReason.ADMISSION_CHECK.value, "At least one admission check is false"
            )
            return
        self.admit_if_ready(ws)

    # ------------------------------------------------------------ dynamic reclaim
    def set_reclaimable(self, ws: WorkloadState, reclaimable: Mapping[str, int]) -> None:
        state = self.state
        new = {name: count for name, count in reclaimable.items() if count > 0}
        if new == ws.reclaimable:
            return
        ws.reclaimable = new
        ws.refresh_pod_sets()
        state.dirty.add(ws.key)
        if ws.usage_cq is not None:
            self.recharge(ws)
            cq = state.cqs.get(ws.usage_cq)
            if cq is not None:
                flush_inadmissible(state, cq)
        elif ws.where != 0:
            enqueue(state, ws)

    # ------------------------------------------------------------ timers
    def pods_ready_deadline(self, ws: WorkloadState) -> float | None:
        wfpr = self.state.config.wait_for_pods_ready
        if wfpr is None or not ws.active or ws.is_evicted or not ws.is_admitted:
            return None
        cond = ws.conditions.get(PODS_READY)
        if cond is not None and cond.status:
            return None
        if cond is None or cond.reason in (WorkloadReason.WAIT_FOR_START.value, "PodsReady"):
            return ws.conditions[ADMITTED].last_transition_time + wfpr.timeout_seconds
        if cond.reason == WorkloadReason.WAIT_FOR_RECOVERY.value:
            recovery = wfpr.effective_recovery_timeout
            if recovery <= 0:
                return None
            return cond.last_transition_time + recovery
        return None

    def _pods_ready_timeout(self, ws: WorkloadState) -> None:
        state = self.state
        wfpr = state.config.wait_for_pods_ready
        assert wfpr is not None
        cond = ws.conditions.get(PODS_READY)
        cause = (
            WorkloadReason.WAIT_FOR_RECOVERY.value
            if cond is not None and cond.reason == WorkloadReason.WAIT_FOR_RECOVERY.value
            else WorkloadReason.WAIT_FOR_START.value
        )
        limit = wfpr.backoff_limit_count
        if limit is not None and ws.requeue_count + 1 > limit:
            self.set_deactivation_target(
                ws,
                WorkloadReason.REQUEUING_LIMIT_EXCEEDED.value,
                "exceeding the maximum number of re-queuing retries",
            )
            return
        now = state.now()
        ws.requeue_count += 1
        wait = min(
            wfpr.backoff_base_seconds * (2 ** (ws.requeue_count - 1)), wfpr.backoff_max_seconds
        )
        at = now + wait
        if ws.requeue_at is None or ws.requeue_at < at:
            ws.requeue_at = at
        self.evict(
            ws,
            WorkloadReason.PODS_READY_TIMEOUT.value,
            f"Exceeded the PodsReady timeout {ws.key}",
            cause=cause,
        )

    def max_execution_deadline(self, ws: WorkloadState) -> float | None:
        limit = ws.spec.maximum_execution_time_seconds
        cond = ws.conditions.get(ADMITTED)
        if limit is None or cond is None or not cond.status:
            return None
        return cond.last_transition_time + limit - ws.accumulated

    def _max_execution_exceeded(self, ws: WorkloadState) -> None:
        if ws.is_true(DEACTIVATION_TARGET):
            return
        ws.accumulated = 0.0
        self.set_deactivation_target(
            ws,
            WorkloadReason.MAXIMUM_EXECUTION_TIME_EXCEEDED.value,
            "exceeding the maximum execution time",
        )

    def _backoff_due(self, ws: WorkloadState) -> None:
        if ws.requeue_at is None or ws.requeue_at > self.state.now():
            return
        cond = ws.conditions.get(REQUEUED)
        if cond is not None and not cond.status and cond.reason in _BACKOFF_REASONS:
            self._maybe_finish_backoff(ws)
        else:
            ws.requeue_at = None
            self.state.dirty.add(ws.key)
        if not ws.has_quota_reservation:
            enqueue(self.state, ws)

    def tick(self) -> None:
        state = self.state
        now = state.now()
        for _, key, kind in self.timers.due(now):
            ws = state.workloads.get(key)
            if ws is None or ws.is_finished:
                continue
            if kind == TimerKind.PODS_READY:
                deadline = self.pods_ready_deadline(ws)
                if deadline is not None and deadline <= now:
                    self._pods_ready_timeout(ws)
            elif kind == TimerKind.MAX_EXECUTION:
                deadline = self.max_execution_deadline(ws)
                if deadline is not None and deadline <= now and ws.active:
                    self._max_execution_exceeded(ws)
            else:
                self._backoff_due(ws)

    def next_timer(self) -> float | None:
        """Earliest pending deadline still relevant, dropping stale ones on the way."""
        state = self.state
        while True:
            top = self.timers.peek()
            if top is None:
                return None
            when, key, kind = top
            ws = state.workloads.get(key)
            valid = ws is not None and not ws.is_finished
            if valid and ws is not None:
                if kind == TimerKind.PODS_READY:
                    deadline = self.pods_ready_deadline(ws)
                    valid = deadline is not None and deadline <= when
                elif kind == TimerKind.MAX_EXECUTION:
                    deadline = self.max_execution_deadline(ws)
                    valid = deadline is not None and deadline <= when
                else:
                    valid = ws.requeue_at is not None and ws.requeue_at <= when
            if valid:
                return when
            self.timers.drop_top()
