"""One scheduling cycle, as upstream Kueue's scheduler runs it.

1. Pop at most one head from every active ClusterQueue.
2. Nominate: check admission checks, the namespace selector and the resource lists
   (requests within limits, none negative), then assign flavors (and topology
   placements, `topology_assigner`) and, when preemption is needed, pick victims
   (partial admission as a fallback).
3. Order the entries: classic (not borrowing first, then priority, then FIFO) or the
   fair-sharing tournament.
4. Process in order against the live quota tree, which earlier entries of this cycle
   have already changed: NoFit is requeued; Preempt without victims holds capacity
   (unless the CQ can always reclaim); overlapping victims or "no longer fits" skip (a
   placement whose domains an earlier entry took is computed again first); Preempt
   evicts victims; Fit reserves quota.
5. Requeue everything not admitted with QuotaReserved=False (`Pending`, message).

The quota tree (and the topology usage per domain) is the snapshot: simulated changes are
reverted, capacity held for the cycle is released at its end, and victims give their
quota back after the cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from core.api.workload_conditions import WorkloadReason
from core.engine import concurrent_admission, topology_assigner
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.fair_sharing import DRS, compare_drs, dominant_resource_share
from core.engine.flavor_assignment import Assignment, FlavorAssigner, Mode
from core.engine.lifecycle import Lifecycle
from core.engine.model import (
    AdmittedWorkload,
    CycleResult,
    PreemptionPolicy,
    PreemptionRecord,
    QueueingStrategy,
)
from core.engine.preemption import Preemptor, Target, preemption_message
from core.engine.queue_order import queue_order_time
from core.engine.queueing import backoff_expired, mark_pending, namespace_selected
from core.engine.quota_tree import (
    FlavorResource,
    QuotaNode,
    add_usages,
    fits,
    remove_usages,
)
from core.engine.resource_validation import resource_validation_message
from core.engine.topology_state import TasUsage
from core.engine.verdict_cache import VerdictCache, cacheable, fresh_last
from core.engine.workload_slices import kept_flavors, replaced_slice, retire, set_aside
from core.engine.workload_state import WorkloadState

PENDING = WorkloadReason.PENDING.value

# Capacity held for the rest of a cycle: quota node, quota usage, topology usage.
Held = tuple[QuotaNode, dict[FlavorResource, int], list[TasUsage]]


class EntryStatus(IntEnum):
    NOT_NOMINATED = 0
    SKIPPED = 1
    NOMINATED = 2
    ASSUMED = 3


class RequeueReason(IntEnum):
    GENERIC = 0
    FAILED_AFTER_NOMINATION = 1
    NAMESPACE_MISMATCH = 2
    PENDING_PREEMPTION = 3


@dataclass(slots=True)
class Entry:
    ws: WorkloadState
    cq: ClusterQueueState
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: EntryStatus = EntryStatus.NOT_NOMINATED
    message: str = ""
    requeue_reason: RequeueReason = RequeueReason.GENERIC
    pending_reason: str = PENDING


def invalid_resources(ws: WorkloadState) -> str | None:
    """Why the workload's resource lists make it inadmissible, or None."""
    return resource_validation_message(ps.resource_problems for ps in ws.spec.pod_sets)


class SchedulingCycle:
    __slots__ = ("fair", "lifecycle", "preemptor", "result", "state", "verdicts")

    def __init__(
        self,
        state: ClusterState,
        lifecycle: Lifecycle,
        preemptor: Preemptor,
        verdicts: VerdictCache | None = None,
    ) -> None:
        self.state = state
        self.lifecycle = lifecycle
        self.preemptor = preemptor
        self.fair = state.config.fair_sharing is not None
        self.result = CycleResult()
        self.verdicts = verdicts

    # ------------------------------------------------------------------ driver
    def run(self) -> CycleResult:
        state = self.state
        heads: list[tuple[WorkloadState, ClusterQueueState]] = []
        cqs = state.cqs
        # Only queues with heads, in ClusterQueue-name order.
        for name in state.queues.with_heads():
            cq = cqs[name]
            if not cq.schedulable:
                continue
            ws = cq.queue.pop()
            if ws is not None:
                heads.append((ws, cq))
        self.result.heads = len(heads)
        self.result.tried = frozenset(ws.key for ws, _ in heads)
        if not heads:
            return self.result

        entries, inadmissible = self._nominate(heads)
        held: list[Held] = []
        preempted: dict[str, WorkloadState] = {}
        victims: list[WorkloadState] = []
        for entry in self._ordered(entries):
            self._process(entry, held, preempted, victims)
        # Capacity held for this cycle only goes back before anyone is requeued.
        for node, usage, tas in held:
            remove_usages(node, usage)
            state.topology.remove_usage(tas)
        for entry in entries:
            if entry.status != EntryStatus.ASSUMED:
                self._requeue(entry)
        for entry in inadmissible:
            self._requeue(entry)
        if state.config.release_quota_on_eviction:
            for ws in victims:
                self.lifecycle.complete_eviction(ws)
        return self.result

    # ------------------------------------------------------------------ nomination
    def _nominate(
        self, heads: list[tuple[WorkloadState, ClusterQueueState]]
    ) -> tuple[list[Entry], list[Entry]]:
        entries: list[Entry] = []
        inadmissible: list[Entry] = []
        for ws, cq in heads:
            entry = Entry(ws, cq)
            if ws.has_retry_or_rejected_checks():
                entry.message = "The workload has failed admission checks"
            elif not namespace_selected(self.state, cq, ws):
                entry.message = "Workload namespace doesn't match ClusterQueue selector"
                entry.requeue_reason = RequeueReason.NAMESPACE_MISMATCH
            elif (invalid := invalid_resources(ws)) is not None:
                entry.message = invalid
            else:
                assignment, targets = self._verdict(ws, cq)
                entry.assignment = assignment
                entry.targets = targets
                entry.message = assignment.message()
                entries.append(entry)
                continue
            inadmissible.append(entry)
        return entries, inadmissible

    def _verdict(self, ws: WorkloadState, cq: ClusterQueueState) -> tuple[Assignment, list[Target]]:
        """The head's nomination, and where its flavor search stopped: kept from an alike
        head if nothing changed since (`verdict_cache`), else computed (and kept when it
        admits no one)."""
        verdicts = self.verdicts
        if verdicts is not None and not cacheable(self.state, ws, cq):
            verdicts = None
        if verdicts is not None:
            kept = verdicts.get(self.state, cq, ws)
            if kept is not None:
                ws.last_assignment = fresh_last(kept)
                return kept, []
        self.result.evaluated += 1
        with set_aside(self.state, replaced_slice(self.state, ws, cq)):
            assignment, targets = self._assignments(ws, cq)
        ws.last_assignment = assignment.last
        if verdicts is not None:
            verdicts.keep(self.state, cq, ws, assignment, len(targets))
        return assignment, targets

    def _assigner(self, ws: WorkloadState, cq: ClusterQueueState) -> FlavorAssigner:
        return FlavorAssigner(
            ws,
            cq,
            self.state.flavors,
            fair_sharing=self.fair,
            oracle=self.preemptor.simulate,
            state=self.state,
            kept_flavors=kept_flavors(replaced_slice(self.state, ws, cq)),
            allowed_flavors=concurrent_admission.allowed_flavors(self.state, ws),
        )

    def _targets(
        self, ws: WorkloadState, cq: ClusterQueueState, assignment: Assignment
    ) -> list[Target]:
        """Victims so that quota and, for TAS pod sets, a topology placement fit."""
        tas = assignment.tas
        tas_fits = None
        if tas:
            state = self.state

            def tas_fits() -> bool:
                return topology_assigner.place(state, tas, simulate_empty=False).ok

        return self.preemptor.get_targets(
            ws, cq, assignment.frs_needing_preemption(), assignment.usage, tas_fits=tas_fits
        )

    def _assignments(
        self, ws: WorkloadState, cq: ClusterQueueState
    ) -> tuple[Assignment, list[Target]]:
        assignment, targets = self._choose_assignment(ws, cq)
        if assignment.tas:
            self._place_preempting(assignment, targets)
        return assignment, targets

    def _choose_assignment(
        self, ws: WorkloadState, cq: ClusterQueueState
    ) -> tuple[Assignment, list[Target]]:
        assigner = self._assigner(ws, cq)
        full = assigner.assign()
        mode = full.mode()
        if mode == Mode.FIT:
            return full, []
        if mode == Mode.PREEMPT and not concurrent_admission.is_variant(self.state, ws):
            targets = self._targets(ws, cq, full)
            if targets:
                return full, targets
        partial = self._partial(ws, assigner, cq)
        if partial is not None:
            return partial
        return full, []

    def _place_preempting(self, assignment: Assignment, targets: list[Target]) -> None:
        """A preempting workload's placement: without its victims, or on an empty topology."""
        if assignment.mode() != Mode.PREEMPT or assignment.tas is None:
            return
        removed = [t.ws for t in targets]
        self._remove_usages(removed)
        try:
            topology_assigner.after_targets(
                self.state, assignment, assignment.tas, have_targets=bool(targets)
            )
        finally:
            self._add_usages(removed)

    def _remove_usages(self, workloads: list[WorkloadState]) -> None:
        state = self.state
        for ws in workloads:
            owner = state.cqs.get(ws.usage_cq or "")
            if owner is not None:
                remove_usages(owner.node, ws.usage)
            state.topology.remove_usage(ws.tas_usage)

    def _add_usages(self, workloads: list[WorkloadState]) -> None:
        state = self.state
        for ws in workloads:
            owner = state.cqs.get(ws.usage_cq or "")
            if owner is not None:
                add_usages(owner.node, ws.usage)
            state.topology.add_usage(ws.tas_usage)

    def _partial(
        self, ws: WorkloadState, assigner: FlavorAssigner, cq: ClusterQueueState
    ) -> tuple[Assignment, list[Target]] | None:
        """Binary-search the largest reduced pod counts that fit (upstream's reducer)."""
        pod_sets = ws.spec.pod_sets
        full = [ps.count for ps in pod_sets]
        deltas = [
            ps.count - (ps.min_count if ps.min_count is not None else ps.count) for ps in pod_sets
        ]
        total = sum(deltas)
        if total <= 0:
            return None
        found: tuple[Assignment, list[Target]] | None = None
        found_idx = -1
        lo, hi = 0, total + 1
        while lo < hi:
            mid = (lo + hi) // 2
            counts = [full[i] - deltas[i] * mid // total for i in range(len(full))]
            attempt = assigner.assign(counts)
            mode = attempt.mode()
            ok = False
            targets: list[Target] = []
            if mode == Mode.FIT:
                ok = True
            elif mode == Mode.PREEMPT and not concurrent_admission.is_variant(self.state, ws):
                targets = self._targets(ws, cq, attempt)
                ok = bool(targets)
            if ok:
                found, found_idx = (attempt, targets), mid
                hi = mid
            else:
                lo = mid + 1
        if found is not None and lo == found_idx:
            return found
        return None

    # ------------------------------------------------------------------ ordering
    def _ordered(self, entries: list[Entry]) -> list[Entry] | _FairIterator:
        if self.fair:
            return _FairIterator(self, entries)
        config = self.state.config

        def key(e: Entry) -> tuple[bool, int, int, float]:
            borrows = e.assignment.borrowing if e.assignment is not None else 0
            return (
                not e.ws.has_quota_reservation,
                borrows,
                -e.ws.priority,
                queue_order_time(e.ws, config),
            )

        return sorted(entries, key=key)

    # ------------------------------------------------------------------ processing
    def _process(
        self,
        e: Entry,
        held: list[Held],
        preempted: dict[str, WorkloadState],
        victims: list[WorkloadState],
    ) -> None:
        assignment = e.assignment
        assert assignment is not None
        cq = e.cq
        mode = assignment.mode()
        if mode == Mode.NO_FIT:
            return
        if self._waits_for_sibling(e):
            return
        if mode == Mode.PREEMPT and not e.targets:
            if cq.spec.preemption.reclaim_within_cohort != PreemptionPolicy.ANY:
                reserve = self._to_reserve(e)
                self._hold(held, cq, reserve, assignment)
            return
        if any(t.ws.key in preempted for t in e.targets):
            self._skip(e, "Workload has overlapping preemption targets with another workload")
            return
        old = replaced_slice(self.state, e.ws, cq)
        with set_aside(self.state, old):
            fit = self._fits_after_removals(cq, assignment, preempted, e.targets)
            if fit is None and mode == Mode.FIT:
                # Quota still fits but an earlier entry took the domains: place it again.
                e.ws.last_assignment = None
                assignment, e.targets = self._assignments(e.ws, cq)
                e.assignment = assignment
                e.message = assignment.message()
                mode = assignment.mode()
                if mode != Mode.NO_FIT and (mode == Mode.FIT or e.targets):
                    fit = self._fits_after_removals(cq, assignment, preempted, e.targets)
        if not fit:
            self._skip(e, "Workload no longer fits after processing another workload")
            return
        usage = assignment.usage
        for t in e.targets:
            preempted[t.ws.key] = t.ws
        if mode == Mode.PREEMPT:
            self._hold(held, cq, usage, assignment)
            e.ws.last_assignment = None
            count = self._issue_preemptions(e, victims)
            if count:
                e.message += f". Pending the preemption of {count} workload(s)"
                e.requeue_reason = RequeueReason.PENDING_PREEMPTION
            return
        if self._blocked_by_pods_ready():
            self._hold(held, cq, usage, assignment)
            e.status = EntryStatus.SKIPPED
            e.pending_reason = "Waiting"
            e.message = "waiting for all admitted workloads to be in PodsReady condition"
            e.requeue_reason = RequeueReason.FAILED_AFTER_NOMINATION
            return
        e.status = EntryStatus.ASSUMED
        admission = assignment.to_admission(cq.name)
        if old is not None:
            retire(self.lifecycle, old)  # its quota becomes the new slice's
            self.result.replaced[old.key] = cq.name
        self.lifecycle.reserve(e.ws, cq, admission)
        self.result.admitted.append(AdmittedWorkload(key=e.ws.key, admission=admission))

    def _waits_for_sibling(self, e: Entry) -> bool:
        """A concurrent-admission variant whose sibling holds quota waits (evicting it
        first to migrate); parked as inadmissible, the sibling's release wakes it."""
        blocked = concurrent_admission.blocked(self.state, e.ws, e.cq)
        if blocked is None:
            return False
        sibling = blocked.migrate_from
        if sibling is not None and not sibling.is_evicted:
            self.lifecycle.evict(
                sibling,
                WorkloadReason.FLAVOR_MIGRATION.value,
                concurrent_admission.migration_message(e.ws),
            )
        e.message = f"{e.message}. {blocked.message}" if e.message else blocked.message
        e.ws.last_assignment = None
        return True

    def _skip(self, e: Entry, message: str) -> None:
        e.status = EntryStatus.SKIPPED
        e.message = message
        e.ws.last_assignment = None

    def _blocked_by_pods_ready(self) -> bool:
        wfpr = self.state.config.wait_for_pods_ready
        return wfpr is not None and wfpr.block_admission and bool(self.lifecycle.not_ready)

    def _hold(
        self,
        held: list[Held],
        cq: ClusterQueueState,
        usage: dict[FlavorResource, int],
        assignment: Assignment,
    ) -> None:
        """Keep quota (and the placement's node capacity) for the rest of this cycle."""
        tas = topology_assigner.assignment_usage(assignment)
        add_usages(cq.node, usage)
        self.state.topology.add_usage(tas)
        held.append((cq.node, usage, tas))

    def _fits_after_removals(
        self,
        cq: ClusterQueueState,
        assignment: Assignment,
        preempted: dict[str, WorkloadState],
        targets: list[Target],
    ) -> bool | None:
        """True if it fits once the victims are gone; False if quota does not, None if
        only the topology placement does not."""
        removed: list[WorkloadState] = list(preempted.values())
        removed.extend(t.ws for t in targets if t.ws.key not in preempted)
        self._remove_usages(removed)
        try:
            if not fits(cq.node, assignment.usage):
                return False
            if not topology_assigner.still_fits(self.state, assignment):
                return None
            return True
        finally:
            self._add_usages(removed)

    def _to_reserve(self, e: Entry) -> dict[FlavorResource, int]:
        """Capacity a preempting CQ holds for this cycle while it waits to reclaim."""
        assignment = e.assignment
        assert assignment is not None
        node = e.cq.node
        out: dict[FlavorResource, int] = {}
        for fr, val in assignment.usage.items():
            quota = node.quota(fr)
            used = node.usage.get(fr, 0)
            if assignment.borrowing > 0:
                if quota.borrowing_limit is None:
                    out[fr] = val
                else:
                    out[fr] = min(val, quota.nominal + quota.borrowing_limit - used)
            else:
                out[fr] = max(0, min(val, quota.nominal - used))
        return {fr: v for fr, v in out.items() if v > 0}

    def _issue_preemptions(self, e: Entry, victims: list[WorkloadState]) -> int:
        count = 0
        for t in e.targets:
            victim = t.ws
            count += 1
            if victim.is_evicted:
                continue
            message = preemption_message(e.ws, t.reason, e.cq, t.cq)
            self.lifecycle.evict(
                victim,
                WorkloadReason.PREEMPTED.value,
                message,
                preempted=(t.reason, message),
                defer_release=True,
            )
            victims.append(victim)
            self.result.preempted.append(
                PreemptionRecord(
                    victim=victim.key,
                    victim_uid=victim.uid,
                    victim_cluster_queue=t.cq.name,
                    preemptor=e.ws.key,
                    preemptor_uid=e.ws.uid,
                    preemptor_cluster_queue=e.cq.name,
                    reason=t.reason,
                    message=message,
                )
            )
        return count

    # ------------------------------------------------------------------ requeue
    def _requeue(self, e: Entry) -> None:
        state = self.state
        ws = e.ws
        reason = e.requeue_reason
        if e.status != EntryStatus.NOT_NOMINATED and reason == RequeueReason.GENERIC:
            reason = RequeueReason.FAILED_AFTER_NOMINATION
        queue = e.cq.queue
        if queue.strategy == QueueingStrategy.STRICT_FIFO:
            immediate = reason != RequeueReason.NAMESPACE_MISMATCH
        else:
            immediate = reason in (
                RequeueReason.FAILED_AFTER_NOMINATION,
                RequeueReason.PENDING_PREEMPTION,
            )
        if ws.active and not ws.is_finished and not ws.has_quota_reservation:
            queue.requeue(
                ws,
                immediate=immediate,
                pending_preemption=reason == RequeueReason.PENDING_PREEMPTION,
                backoff_expired=backoff_expired(ws, state.now()),
            )
        if e.status in (EntryStatus.NOT_NOMINATED, EntryStatus.SKIPPED):
            mark_pending(state, ws, e.pending_reason, e.message)


class _FairIterator:
    """Fair-sharing order: per root cohort, a tournament won by the lowest share."""

    __slots__ = ("by_root", "cycle", "roots")

    def __init__(self, cycle: SchedulingCycle, entries: list[Entry]) -> None:
        self.cycle = cycle
        self.by_root: dict[str, dict[str, Entry]] = {}
        roots: dict[str, QuotaNode | None] = {}
        for e in entries:
            node = e.cq.node
            root = node.root() if node.parent is not None else None
            name = root.name if root is not None else ""
            roots[name] = root
            self.by_root.setdefault(name, {})[e.cq.name] = e
        self.roots = roots

    def __iter__(self) -> _FairIterator:
        return self

    def __next__(self) -> Entry:
        for name in sorted(self.by_root):
            pending = self.by_root[name]
            if not pending:
                continue
            root = self.roots[name]
            if root is None:
                cq_name = sorted(pending)[0]
                return pending.pop(cq_name)
            winner = self._tournament(root, pending)
            assert winner is not None
            del pending[winner.cq.name]
            return winner
        raise StopIteration

    def _tournament(self, root: QuotaNode, pending: dict[str, Entry]) -> Entry | None:
        config = self.cycle.state.config
        drs_values: dict[tuple[str, str], DRS] = {}
        for e in pending.values():
            assert e.assignment is not None
            usage = e.assignment.usage
            node = e.cq.node
            add_usages(node, usage)
            try:
                share = dominant_resource_share(node)
                for ancestor in node.ancestors():
                    drs_values[(ancestor.name, e.ws.key)] = share
                    share = dominant_resource_share(ancestor)
            finally:
                remove_usages(node, usage)

        def less(a: Entry, b: Entry, parent: str) -> bool:
            a_drs = drs_values[(parent, a.ws.key)]
            b_drs = drs_values[(parent, b.ws.key)]
            assert a.assignment is not None and b.assignment is not None
            a_borrow = a_drs.borrowing_on(a.assignment.usage)
            b_borrow = b_drs.borrowing_on(b.assignment.usage)
            if a_borrow != b_borrow:
                return not a_borrow
            c = compare_drs(a_drs, b_drs)
            if c:
                return c < 0
            if a.ws.priority != b.ws.priority:
                return a.ws.priority > b.ws.priority
            return queue_order_time(a.ws, config) < queue_order_time(b.ws, config)

        def run(cohort: QuotaNode) -> Entry | None:
            candidates: list[Entry] = []
            for child in cohort.child_cohorts:
                winner = run(child)
                if winner is not None:
                    candidates.append(winner)
            for child in cohort.child_cqs:
                e = pending.get(child.name)
                if e is not None:
                    candidates.append(e)
            if not candidates:
                return None
            best = candidates[0]
            for current in candidates[1:]:
                if less(current, best, cohort.name):
                    best = current
            return best

        return run(root)
