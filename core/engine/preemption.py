"""Choosing preemption victims: classic (priority and reclaim) and fair sharing.

Both strategies simulate on the live quota tree: candidates' usage is removed one at a
time until the preemptor fits, then the removed list is walked backwards and every
victim without which the preemptor still fits is put back ("fill back"), leaving a
minimal set. Every simulated change is reverted before returning.

Candidate order (upstream's): workloads already being evicted first, then those of other
ClusterQueues before the preemptor's own, lower priority first, most recently reserved
first, then UID.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum

from core.api.workload_conditions import WorkloadReason
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.config import FairSharingStrategy
from core.engine.fair_sharing import (
    DRS,
    NEGATIVE_DRS,
    compare_drs,
    dominant_resource_share,
)
from core.engine.flavor_assignment import Possibility
from core.engine.model import PreemptionPolicy
from core.engine.queue_order import queue_order_time
from core.engine.quota_tree import (
    FlavorResource,
    QuotaNode,
    add_usages,
    available,
    lowest_fitting_subtree_height,
    quantities_fit_in_quota,
    remove_usages,
    within_nominal,
)
from core.engine.workload_state import QUOTA_RESERVED, WorkloadState

__all__ = ["Preemptor", "Target", "preemption_message"]


class Variant(IntEnum):
    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4


_VARIANT_REASON = {
    Variant.WITHIN_CQ: WorkloadReason.IN_CLUSTER_QUEUE,
    Variant.HIERARCHICAL_RECLAIM: WorkloadReason.IN_COHORT_RECLAMATION,
    Variant.RECLAIM_WITHOUT_BORROWING: WorkloadReason.IN_COHORT_RECLAMATION,
    Variant.RECLAIM_WHILE_BORROWING: WorkloadReason.IN_COHORT_RECLAIM_WHILE_BORROWING,
}

HUMAN_REASONS = {
    WorkloadReason.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    WorkloadReason.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    WorkloadReason.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    WorkloadReason.IN_COHORT_RECLAIM_WHILE_BORROWING: (
        "reclamation within the cohort while borrowing"
    ),
}


@dataclass(slots=True)
class Target:
    ws: WorkloadState
    reason: WorkloadReason
    cq: ClusterQueueState


def satisfies_policy(
    state: ClusterState,
    preemptor: WorkloadState,
    candidate: WorkloadState,
    policy: PreemptionPolicy,
) -> bool:
    if preemptor.priority > candidate.priority:
        return policy != PreemptionPolicy.NEVER
    if policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return preemptor.priority == candidate.priority and queue_order_time(
            preemptor, state.config
        ) < queue_order_time(candidate, state.config)
    return policy == PreemptionPolicy.ANY


def uses_resources(ws: WorkloadState, frs: set[FlavorResource]) -> bool:
    return any(fr in frs for fr in ws.usage)


def cq_path(cq: ClusterQueueState) -> str:
    names = [n.name for n in cq.node.ancestors()]
    names.reverse()
    return "/" + "/".join([*names, cq.name])


def preemption_message(
    preemptor: WorkloadState,
    reason: WorkloadReason,
    preemptor_cq: ClusterQueueState,
    target_cq: ClusterQueueState,
) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor.spec.job_uid or 'UNKNOWN'}) due to {HUMAN_REASONS[reason]}; "
        f"preemptor path: {cq_path(preemptor_cq)}; preemptee path: {cq_path(target_cq)}"
    )


class Preemptor:
    """Finds victims for a preemptor in the current (live) quota tree."""

    __slots__ = ("state", "tas_fits")

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        # While choosing victims for a TAS workload: does its placement fit now?
        self.tas_fits: Callable[[], bool] | None = None

    # ------------------------------------------------------------ ordering
    def _candidate_key(
        self, ws: WorkloadState, own_cq: str, now: float
    ) -> tuple[bool, bool, int, float, str]:
        cond = ws.conditions.get(QUOTA_RESERVED)
        reserved_at = cond.last_transition_time if cond is not None and cond.status else now
        return (not ws.is_evicted, ws.cluster_queue == own_cq, ws.priority, -reserved_at, ws.uid)

    def _sorted(self, items: list[_Candidate], own_cq: str) -> list[_Candidate]:
        now = self.state.now()
        items.sort(key=lambda c: self._candidate_key(c.ws, own_cq, now))
        return items

    # ------------------------------------------------------------ simulation helpers
    def _remove(self, ws: WorkloadState) -> None:
        cq = self.state.cqs.get(ws.usage_cq or "")
        if cq is not None:
            remove_usages(cq.node, ws.usage)
        self.state.topology.remove_usage(ws.tas_usage)

    def _add(self, ws: WorkloadState) -> None:
        cq = self.state.cqs.get(ws.usage_cq or "")
        if cq is not None:
            add_usages(cq.node, ws.usage)
        self.state.topology.add_usage(ws.tas_usage)

    def _fits(
        self, cq: ClusterQueueState, usage: dict[FlavorResource, int], allow_borrowing: bool
    ) -> bool:
        node = cq.node
        for fr, val in usage.items():
            if not allow_borrowing and node.borrowing_with(fr, val):
                return False
            if val > max(0, available(node, fr)):
                return False
        return self.tas_fits is None or self.tas_fits()

    def _fill_back(
        self,
        cq: ClusterQueueState,
        usage: dict[FlavorResource, int],
        targets: list[Target],
        allow_borrowing: bool,
    ) -> list[Target]:
        i = len(targets) - 2
        while i >= 0:
            self._add(targets[i].ws)
            if self._fits(cq, usage, allow_borrowing):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self._remove(targets[i].ws)
            i -= 1
        return targets

    def _restore(self, targets: Iterable[Target]) -> None:
        for t in targets:
            self._add(t.ws)

    # ------------------------------------------------------------ entry points
    def get_targets(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        frs_need_preemption: set[FlavorResource],
        usage: dict[FlavorResource, int],
        tas_fits: Callable[[], bool] | None = None,
    ) -> list[Target]:
        """Victims for ws; with `tas_fits`, enough that its topology placement fits too."""
        if not frs_need_preemption:
            return []
        self.tas_fits = tas_fits
        try:
            if self.state.config.fair_sharing is not None:
                return self._fair(ws, cq, frs_need_preemption, usage)
            return self._classical(ws, cq, frs_need_preemption, usage)
        finally:
            self.tas_fits = None

    def simulate(
        self, cq: ClusterQueueState, ws: WorkloadState, fr: FlavorResource, quantity: int
    ) -> tuple[Possibility, int]:
        """The flavor assigner's oracle: could preempting make room for `quantity` of fr?"""
        targets = self.get_targets(ws, cq, {fr}, {fr: quantity})
        if not targets:
            borrow, _ = lowest_fitting_subtree_height(cq.node, fr, quantity)
            return Possibility.NO_CANDIDATES, borrow
        for t in targets:
            self._remove(t.ws)
        borrow, _ = lowest_fitting_subtree_height(cq.node, fr, quantity)
        self._restore(targets)
        if any(t.ws.cluster_queue == cq.name for t in targets):
            return Possibility.PREEMPT, borrow
        return Possibility.RECLAIM, borrow

    # ------------------------------------------------------------ classical
    def _classify(
        self,
        preemptor: WorkloadState,
        cq: ClusterQueueState,
        candidate: WorkloadState,
        frs: set[FlavorResource],
        hierarchical_advantage: bool,
    ) -> Variant:
        if not uses_resources(candidate, frs):
            return Variant.NEVER
        same = candidate.cluster_queue == cq.name
        preemption = cq.spec.preemption
        policy = preemption.within_cluster_queue if same else preemption.reclaim_within_cohort
        if not satisfies_policy(self.state, preemptor, candidate, policy):
            return Variant.NEVER
        if same:
            return Variant.WITHIN_CQ
        if hierarchical_advantage:
            return Variant.HIERARCHICAL_RECLAIM
        bwc = preemption.borrow_within_cohort
        if bwc.policy == PreemptionPolicy.NEVER:
            return Variant.RECLAIM_WITHOUT_BORROWING
        if candidate.priority >= preemptor.priority:
            return Variant.RECLAIM_WITHOUT_BORROWING
        threshold = bwc.max_priority_threshold
        if threshold is not None and candidate.priority > threshold:
            return Variant.RECLAIM_WITHOUT_BORROWING
        return Variant.RECLAIM_WHILE_BORROWING

    def _from_cq(
        self,
        preemptor: WorkloadState,
        cq: ClusterQueueState,
        source: ClusterQueueState,
        lca: QuotaNode | None,
        frs: set[FlavorResource],
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        for key in sorted(source.reserving):
            cand = source.reserving[key]
            variant = self._classify(preemptor, cq, cand, frs, advantage)
            if variant != Variant.NEVER:
                out.append(_Candidate(cand, lca, variant))

    def _collect_in_subtree(
        self,
        preemptor: WorkloadState,
        cq: ClusterQueueState,
        current: QuotaNode,
        subtree_root: QuotaNode,
        skip: QuotaNode | None,
        frs: set[FlavorResource],
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        for child in current.child_cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            self._collect_in_subtree(preemptor, cq, child, subtree_root, skip, frs, advantage, out)
        for child in current.child_cqs:
            if child is cq.node or within_nominal(child, frs):
                continue
            source = self.state.cqs.get(child.name)
            if source is not None:
                self._from_cq(preemptor, cq, source, subtree_root, frs, advantage, out)

    def _classical(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        frs: set[FlavorResource],
        usage: dict[FlavorResource, int],
    ) -> list[Target]:
        preemption = cq.spec.preemption
        same_queue: list[_Candidate] = []
        if preemption.within_cluster_queue != PreemptionPolicy.NEVER:
            self._from_cq(ws, cq, cq, None, frs, False, same_queue)
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        node = cq.node
        if node.parent is not None and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER:
            advantage, remaining = quantities_fit_in_quota(node, usage)
            previous: QuotaNode | None = None
            for ancestor in node.ancestors():
                target_list = hierarchy if advantage else by_priority
                self._collect_in_subtree(
                    ws, cq, ancestor, ancestor, previous, frs, advantage, target_list
                )
                fits_here, remaining = quantities_fit_in_quota(ancestor, remaining)
                advantage = advantage or fits_here
                previous = ancestor
        name = cq.name
        self._sorted(same_queue, name)
        self._sorted(by_priority, name)
        self._sorted(hierarchy, name)
        ordered = [
            *[c for c in hierarchy if c.ws.is_evicted],
            *[c for c in by_priority if c.ws.is_evicted],
            *[c for c in same_queue if c.ws.is_evicted],
            *[c for c in hierarchy if not c.ws.is_evicted],
            *[c for c in by_priority if not c.ws.is_evicted],
            *[c for c in same_queue if not c.ws.is_evicted],
        ]
        borrow_forbidden = preemption.borrow_within_cohort.policy == PreemptionPolicy.NEVER
        attempts: tuple[bool, ...]
        if (not hierarchy and not by_priority) or (
            borrow_forbidden and not self._under_nominal(cq, frs)
        ):
            attempts = (True,)
        elif borrow_forbidden and not hierarchy:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for allow_borrowing in attempts:
            targets: list[Target] = []
            for cand in ordered:
                if not self._valid(cq, cand, allow_borrowing, frs):
                    continue
                self._remove(cand.ws)
                source = self.state.cqs[cand.ws.cluster_queue or ""]
                targets.append(Target(cand.ws, _VARIANT_REASON[cand.variant], source))
                if self._fits(cq, usage, allow_borrowing):
                    targets = self._fill_back(cq, usage, targets, allow_borrowing)
                    self._restore(targets)
                    return targets
            self._restore(targets)
        return []

    def _valid(
        self,
        cq: ClusterQueueState,
        cand: _Candidate,
        allow_borrowing: bool,
        frs: set[FlavorResource],
    ) -> bool:
        if cand.ws.cluster_queue == cq.name:
            return True
        if allow_borrowing and cand.variant == Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        source = self.state.cqs.get(cand.ws.cluster_queue or "")
        if source is None or within_nominal(source.node, frs):
            return False
        for ancestor in source.node.ancestors():
            if ancestor is cand.lca:
                break
            if within_nominal(ancestor, frs):
                return False
        return True

    @staticmethod
    def _under_nominal(cq: ClusterQueueState, frs: set[FlavorResource]) -> bool:
        node = cq.node
        return all(node.usage.get(fr, 0) < node.quota(fr).nominal for fr in frs)

    # ------------------------------------------------------------ fair sharing
    def _fair(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        frs: set[FlavorResource],
        usage: dict[FlavorResource, int],
    ) -> list[Target]:
        candidates = self._fair_candidates(ws, cq, frs)
        if not candidates:
            return []
        now = self.state.now()
        candidates.sort(key=lambda c: self._candidate_key(c, cq.name, now))
        config = self.state.config.fair_sharing
        assert config is not None
        strategies = config.preemption_strategies or (
            FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
            FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
        )
        # Shares are judged as if the preemptor were already admitted.
        add_usages(cq.node, usage)
        within_nominal_preemptor = not any(cq.node.borrowing(fr) for fr in frs)
        try:
            fits, targets, retry = self._fair_first(
                ws, cq, usage, candidates, strategies[0], within_nominal_preemptor
            )
            if not fits and len(strategies) > 1:
                fits, targets = self._fair_second(ws, cq, usage, retry, targets)
        finally:
            remove_usages(cq.node, usage)
        if not fits:
            self._restore(targets)
            return []
        targets = self._fill_back(cq, usage, targets, True)
        self._restore(targets)
        return targets

    def _fair_candidates(
        self, ws: WorkloadState, cq: ClusterQueueState, frs: set[FlavorResource]
    ) -> list[WorkloadState]:
        out: list[WorkloadState] = []
        preemption = cq.spec.preemption
        if preemption.within_cluster_queue != PreemptionPolicy.NEVER:
            for key in sorted(cq.reserving):
                cand = cq.reserving[key]
                if satisfies_policy(
                    self.state, ws, cand, preemption.within_cluster_queue
                ) and uses_resources(cand, frs):
                    out.append(cand)
        node = cq.node
        if node.parent is not None and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER:
            for other_node in node.root().subtree_cluster_queues():
                if other_node is node:
                    continue
                if not any(other_node.borrowing(fr) for fr in frs):
                    continue
                other = self.state.cqs.get(other_node.name)
                if other is None:
                    continue
                for key in sorted(other.reserving):
                    cand = other.reserving[key]
                    if satisfies_policy(
                        self.state, ws, cand, preemption.reclaim_within_cohort
                    ) and uses_resources(cand, frs):
                        out.append(cand)
        return out

    def _fits_fair(self, cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> bool:
        remove_usages(cq.node, usage)
        try:
            return self._fits(cq, usage, True)
        finally:
            add_usages(cq.node, usage)

    def _fair_first(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        usage: dict[FlavorResource, int],
        candidates: list[WorkloadState],
        strategy: FairSharingStrategy,
        preemptor_within_nominal: bool,
    ) -> tuple[bool, list[Target], list[WorkloadState]]:
        ordering = _TargetOrdering(self, cq, candidates)
        targets: list[Target] = []
        retry: list[WorkloadState] = []
        for target_cq in ordering.iterate():
            if target_cq is cq:
                cand = ordering.pop(target_cq)
                self._remove(cand)
                targets.append(Target(cand, WorkloadReason.IN_CLUSTER_QUEUE, target_cq))
                if self._fits_fair(cq, usage):
                    return True, targets, []
                continue
            if preemptor_within_nominal:
                cand = ordering.pop(target_cq)
                self._remove(cand)
                targets.append(Target(cand, WorkloadReason.IN_COHORT_RECLAMATION, target_cq))
                if self._fits_fair(cq, usage):
                    return True, targets, []
                continue
            preemptor_new, target_old = ordering.shares(target_cq)
            while ordering.has_workload(target_cq):
                cand = ordering.pop(target_cq)
                target_new = ordering.target_share_after_removal(target_cq, cand)
                if _strategy_allows(strategy, preemptor_new, target_old, target_new):
                    self._remove(cand)
                    targets.append(Target(cand, WorkloadReason.IN_COHORT_FAIR_SHARING, target_cq))
                    if self._fits_fair(cq, usage):
                        return True, targets, []
                    break
                retry.append(cand)
        return False, targets, retry

    def _fair_second(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        usage: dict[FlavorResource, int],
        retry: list[WorkloadState],
        targets: list[Target],
    ) -> tuple[bool, list[Target]]:
        ordering = _TargetOrdering(self, cq, retry)
        for target_cq in ordering.iterate():
            preemptor_new, target_old = ordering.shares(target_cq)
            if compare_drs(preemptor_new, target_old) < 0:
                cand = ordering.pop(target_cq)
                self._remove(cand)
                targets.append(Target(cand, WorkloadReason.IN_COHORT_FAIR_SHARING, target_cq))
                if self._fits_fair(cq, usage):
                    return True, targets
            ordering.drop(target_cq)
        return False, targets


def _strategy_allows(
    strategy: FairSharingStrategy, preemptor_new: DRS, target_old: DRS, target_new: DRS
) -> bool:
    if strategy == FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return compare_drs(preemptor_new, target_new) <= 0
    return compare_drs(preemptor_new, target_old) < 0


@dataclass(slots=True)
class _Candidate:
    ws: WorkloadState
    lca: QuotaNode | None
    variant: Variant


class _TargetOrdering:
    """Walks the cohort tree towards the ClusterQueue with the highest share that has victims."""

    __slots__ = ("ancestors", "by_cq", "pre", "preemptor", "pruned_cohorts", "pruned_cqs")

    def __init__(
        self, pre: Preemptor, cq: ClusterQueueState, candidates: list[WorkloadState]
    ) -> None:
        self.pre = pre
        self.preemptor = cq
        self.ancestors = {id(a) for a in cq.node.ancestors()}
        self.by_cq: dict[str, list[WorkloadState]] = {}
        for cand in candidates:
            self.by_cq.setdefault(cand.cluster_queue or "", []).append(cand)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()

    def has_workload(self, cq: ClusterQueueState) -> bool:
        return bool(self.by_cq.get(cq.name))

    def pop(self, cq: ClusterQueueState) -> WorkloadState:
        return self.by_cq[cq.name].pop(0)

    def drop(self, cq: ClusterQueueState) -> None:
        self.pruned_cqs.add(cq.name)

    def iterate(self) -> Iterator[ClusterQueueState]:
        node = self.preemptor.node
        if node.parent is None:
            while self.has_workload(self.preemptor):
                yield self.preemptor
            return
        root = node.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> ClusterQueueState | None:
        state = self.pre.state
        best_cq: ClusterQueueState | None = None
        best_cq_drs = NEGATIVE_DRS
        now = state.now()
        for child in cohort.child_cqs:
            if child.name in self.pruned_cqs:
                continue
            cq = state.cqs.get(child.name)
            if cq is None:
                self.pruned_cqs.add(child.name)
                continue
            drs = dominant_resource_share(child)
            if (not drs.borrowing and cq is not self.preemptor) or not self.has_workload(cq):
                self.pruned_cqs.add(child.name)
                continue
            cmp = compare_drs(drs, best_cq_drs)
            if cmp == 0 and best_cq is not None:
                new_c = self.by_cq[cq.name][0]
                cur_c = self.by_cq[best_cq.name][0]
                name = self.preemptor.name
                if self.pre._candidate_key(new_c, name, now) < self.pre._candidate_key(
                    cur_c, name, now
                ):
                    best_cq = cq
            elif cmp > 0:
                best_cq, best_cq_drs = cq, drs
        best_cohort: QuotaNode | None = None
        best_cohort_drs = NEGATIVE_DRS
        for child in cohort.child_cohorts:
            if id(child) in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare_drs(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_cohort is not None and compare_drs(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq

    # -------------------------------------------------------------- shares
    def _lca(self, target: ClusterQueueState) -> QuotaNode:
        for ancestor in target.node.ancestors():
            if id(ancestor) in self.ancestors:
                return ancestor
        raise AssertionError("target shares no cohort with the preemptor")

    @staticmethod
    def _almost_lca(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
        current = node
        for ancestor in node.ancestors():
            if ancestor is lca:
                return current
            current = ancestor
        raise AssertionError("lca is not an ancestor")

    def shares(self, target: ClusterQueueState) -> tuple[DRS, DRS]:
        lca = self._lca(target)
        return (
            dominant_resource_share(self._almost_lca(self.preemptor.node, lca)),
            dominant_resource_share(self._almost_lca(target.node, lca)),
        )

    def target_share_after_removal(self, target: ClusterQueueState, ws: WorkloadState) -> DRS:
        remove_usages(target.node, ws.usage)
        try:
            lca = self._lca(target)
            return dominant_resource_share(self._almost_lca(target.node, lca))
        finally:
            add_usages(target.node, ws.usage)
