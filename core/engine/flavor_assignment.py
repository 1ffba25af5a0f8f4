"""Flavor assignment: for each pod set and resource group, pick a ResourceFlavor.

For every resource group a pod set needs, flavors are tried in the ClusterQueue's order:

1. eligibility: a flavor whose NoSchedule/NoExecute taints the pods do not tolerate, or
   whose node labels contradict the pods' nodeSelector / required node affinity, is out;
2. quota: a request above what the CQ could ever get is NoFit; one within what is
   available now is Fit (at some borrowing level); otherwise preemption is simulated
   (when the request is within nominal quota, when reclaiming higher in the tree could
   help, or when borrowWithinCohort / fair sharing allow preempting while borrowing);
3. flavor fungibility decides whether to stop at this flavor or keep looking, and which
   of the tried flavors is best (BorrowingOverPreemption or PreemptionOverBorrowing).

The result carries upstream's messages ("insufficient unused quota for cpu in flavor
default, 1 more needed") and where the search stopped, so a retry resumes after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from core.api.topology_assignment import DelayedTopologyRequestState
from core.engine import topology_assigner
from core.engine.cluster_state import ClusterQueueState, ClusterState, ResourceGroupInfo
from core.engine.flavor_mode import Mode
from core.engine.model import (
    Admission,
    FlavorFungibility,
    FungibilityPolicy,
    FungibilityPreference,
    PodSetAssignment,
    PreemptionPolicy,
    ResourceFlavor,
    TopologyAssignment,
)
from core.engine.node_matching import (
    first_untolerated_taint,
    flavor_affinity_matches,
    format_taint,
)
from core.engine.quantity import format_quantity
from core.engine.quota_tree import (
    FlavorResource,
    available,
    lowest_fitting_subtree_height,
    potential_available,
)
from core.engine.topology_assigner import TasRequests
from core.engine.workload_state import LastAssignment, WorkloadState


class Possibility(IntEnum):
    """Finer outcome for one flavor, used to compare flavors."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def mode(self) -> Mode:
        if self == Possibility.NO_FIT:
            return Mode.NO_FIT
        if self == Possibility.FIT:
            return Mode.FIT
        return Mode.PREEMPT


_WORST = (Possibility.NO_FIT, 1 << 30)
_BEST = (Possibility.FIT, 0)

# (cq, workload, fr, quantity) -> (possibility, borrowing level after preemption)
PreemptionOracle = Callable[
    [ClusterQueueState, WorkloadState, FlavorResource, int], tuple[Possibility, int]
]


def is_preferred(
    a: tuple[Possibility, int], b: tuple[Possibility, int], fungibility: FlavorFungibility
) -> bool:
    """Whether granular outcome a (possibility, borrowing level) beats b."""
    if a[0] == Possibility.NO_FIT:
        return False
    if b[0] == Possibility.NO_FIT:
        return True
    if fungibility.preference == FungibilityPreference.PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def should_try_next_flavor(rep: tuple[Possibility, int], fungibility: FlavorFungibility) -> bool:
    possibility, borrow = rep
    if possibility in (Possibility.NO_FIT, Possibility.NO_CANDIDATES):
        return True
    if (
        possibility in (Possibility.PREEMPT, Possibility.RECLAIM)
        and fungibility.when_can_preempt == FungibilityPolicy.TRY_NEXT_FLAVOR
    ):
        return True
    return borrow != 0 and fungibility.when_can_borrow == FungibilityPolicy.TRY_NEXT_FLAVOR


@dataclass(slots=True)
class FlavorChoice:
    flavor: str
    mode: Mode
    borrow: int
    tried_idx: int = 0


@dataclass(slots=True)
class PodSetResult:
    name: str
    count: int
    # Total requests of the pod set at `count` pods, per resource.
    requests: dict[str, int]
    flavors: dict[str, FlavorChoice] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    # Topology-aware scheduling: the pod set's TAS flavor, per-pod requests placed, the
    # placement found, or that it is deferred (MultiKueue); `forced` is a mode TAS set.
    tas_flavor: str | None = None
    per_pod: dict[str, int] = field(default_factory=dict)
    topology: TopologyAssignment | None = None
    delayed: DelayedTopologyRequestState | None = None
    forced: Mode | None = None

    @property
    def is_fit(self) -> bool:
        return self.error is None and not self.reasons

    def mode(self) -> Mode:
        if self.forced is not None and self.error is None:
            return self.forced
        if self.is_fit:
            return Mode.FIT
        if self.error is not None or not self.flavors:
            return Mode.NO_FIT
        return min(choice.mode for choice in self.flavors.values())

    def message(self) -> str:
        if self.error is not None:
            return self.error
        return ", ".join(sorted(self.reasons))


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetResult]
    borrowing: int
    usage: dict[FlavorResource, int]
    last: LastAssignment
    _mode: Mode | None = None
    tas: TasRequests | None = None

    def pod_set(self, name: str) -> PodSetResult:
        return next(ps for ps in self.pod_sets if ps.name == name)

    def set_mode(self, psr: PodSetResult, mode: Mode) -> None:
        """Force a pod set's mode (and its flavors'), as upstream's updateMode."""
        psr.forced = mode
        for choice in psr.flavors.values():
            choice.mode = mode
        self._mode = None

    def set_error(self, psr: PodSetResult, error: str) -> None:
        psr.error = error
        self._mode = None

    def mode(self) -> Mode:
        if self._mode is None:
            if not self.pod_sets:
                self._mode = Mode.NO_FIT
            else:
                self._mode = min(ps.mode() for ps in self.pod_sets)
        return self._mode

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.is_fit:
                continue
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def frs_needing_preemption(self) -> set[FlavorResource]:
        out = set()
        for ps in self.pod_sets:
            for res, choice in ps.flavors.items():
                if choice.mode == Mode.PREEMPT:
                    out.add((choice.flavor, res))
        return out

    def to_admission(self, cluster_queue: str) -> Admission:
        return Admission(
            cluster_queue=cluster_queue,
            pod_set_assignments=tuple(
                PodSetAssignment(
                    name=ps.name,
                    flavors={res: c.flavor for res, c in sorted(ps.flavors.items())},
                    resource_usage={res: ps.requests.get(res, 0) for res in sorted(ps.flavors)},
                    count=ps.count,
                    topology_assignment=ps.topology,
                    delayed_topology_request=ps.delayed,
                )
                for ps in self.pod_sets
            ),
        )


class FlavorAssigner:
    """Assigns flavors for one workload against one ClusterQueue's current quota."""

    __slots__ = (
        "allowed_flavors",
        "cq",
        "fair_sharing",
        "flavors",
        "kept_flavors",
        "oracle",
        "state",
        "ws",
    )

    def __init__(
        self,
        ws: WorkloadState,
        cq: ClusterQueueState,
        flavors: dict[str, ResourceFlavor],
        *,
        fair_sharing: bool,
        oracle: PreemptionOracle,
        state: ClusterState | None = None,
        kept_flavors: Mapping[str, Mapping[str, str]] | None = None,
        allowed_flavors: frozenset[str] | None = None,
    ) -> None:
        self.ws = ws
        # The only flavors a concurrent-admission variant may take; None: any.
        self.allowed_flavors = allowed_flavors
        # Pod set -> resource -> flavor a replaced workload slice holds: its pods run
        # there, so the slice replacing it stays on the same flavors.
        self.kept_flavors = kept_flavors or {}
        self.cq = cq
        self.flavors = flavors
        self.fair_sharing = fair_sharing
        self.oracle = oracle
        # Topology-aware scheduling needs the cluster's topology state; None: no TAS.
        self.state = state

    def assign(self, counts: list[int] | None = None) -> Assignment:
        ws = self.ws
        cq = self.cq
        last = ws.last_assignment
        if last is not None and cq.generation > last.generation:
            ws.last_assignment = last = None
        covers_pods = "pods" in cq.rg_by_resource
        result = Assignment(
            pod_sets=[], borrowing=0, usage={}, last=LastAssignment([], cq.generation)
        )
        for idx, ps in enumerate(ws.pod_sets):
            count = ps.count if counts is None else counts[idx]
            requests = {res: per_pod * count for res, per_pod in ps.per_pod.items()}
            if covers_pods:
                requests["pods"] = count
            psr = PodSetResult(name=ps.name, count=count, requests=requests)
            failed = self._assign_pod_set(idx, psr, result.usage, last)
            tried: dict[str, int] = {}
            for res, choice in psr.flavors.items():
                if choice.borrow > result.borrowing:
                    result.borrowing = choice.borrow
                fr = (choice.flavor, res)
                result.usage[fr] = result.usage.get(fr, 0) + requests.get(res, 0)
                tried[res] = choice.tried_idx
            result.last.tried.append(tried)
            result.pod_sets.append(psr)
            if failed:
                break
        else:
            if self.state is not None and result.mode() != Mode.NO_FIT:
                result.tas = topology_assigner.collect(result, ws, cq)
                topology_assigner.after_quota(self.state, result, result.tas)
        return result

    # ------------------------------------------------------------------ per pod set
    def _assign_pod_set(
        self,
        ps_index: int,
        psr: PodSetResult,
        assumed: dict[FlavorResource, int],
        last: LastAssignment | None,
    ) -> bool:
        """Fill psr.flavors / reasons; True when the pod set could not be assigned."""
        cq = self.cq
        requests = psr.requests
        for res in sorted(requests):
            quantity = requests[res]
            group = cq.rg_by_resource.get(res)
            if quantity == 0 and group is None:
                continue
            if res in psr.flavors:
                continue
            if group is None:
                psr.flavors = {}
                psr.reasons = [f"resource {res} unavailable in ClusterQueue"]
                return True
            start = 0 if last is None else last.next_flavor(ps_index, res)
            chosen, reasons, error = self._find_flavor(ps_index, group, requests, assumed, start)
            if error is not None:
                psr.flavors = {}
                psr.reasons = reasons
                psr.error = error
                return True
            if not chosen:
                psr.flavors = {}
                psr.reasons = reasons
                return True
            psr.flavors.update(chosen)
            psr.reasons.extend(reasons)
        return False

    def _find_flavor(
        self,
        ps_index: int,
        group: ResourceGroupInfo,
        requests: dict[str, int],
        assumed: dict[FlavorResource, int],
        start: int,
    ) -> tuple[dict[str, FlavorChoice], list[str], str | None]:
        cq = self.cq
        fungibility = cq.spec.flavor_fungibility
        group_requests = {res: val for res, val in requests.items() if res in group.covered}
        reasons: list[str] = []
        best: dict[str, FlavorChoice] = {}
        best_mode = _WORST
        attempted = -1
        flavors = group.flavors
        idx = start
        while idx < len(flavors):
            attempted = idx
            flavor_name = flavors[idx]
            idx += 1
            mismatch = self._check_flavor(ps_index, flavor_name, group)
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            assignments: dict[str, FlavorChoice] = {}
            rep = _BEST
            for res in sorted(group_requests):
                val = group_requests[res]
                fr = (flavor_name, res)
                possibility, borrow, reason = self._fits_quota(fr, assumed.get(fr, 0), val)
                if reason is not None:
                    reasons.append(reason)
                mode = (possibility, borrow)
                if is_preferred(rep, mode, fungibility):
                    rep = mode
                if rep[0] == Possibility.NO_FIT:
                    break
                assignments[res] = FlavorChoice(flavor_name, possibility.mode, borrow)
            if not should_try_next_flavor(rep, fungibility):
                best, best_mode = assignments, rep
                break
            if is_preferred(rep, best_mode, fungibility):
                best, best_mode = assignments, rep
        tried_idx = -1 if attempted == len(flavors) - 1 else attempted
        for choice in best.values():
            choice.tried_idx = tried_idx
        if best_mode[0] == Possibility.FIT:
            return best, [], None
        return best, reasons, None

    def _check_flavor(
        self, ps_index: int, flavor_name: str, group: ResourceGroupInfo
    ) -> str | None:
        flavor = self.flavors.get(flavor_name)
        if flavor is None:
            return f"flavor {flavor_name} not found"
        if self.allowed_flavors is not None and flavor_name not in self.allowed_flavors:
            return (
                f"flavor {flavor_name} is not allowed by the workload's "
                "kueue.x-k8s.io/workload-allowed-resource-flavors annotation"
            )
        pod_set = self.ws.spec.pod_sets[ps_index]
        kept = self.kept_flavors.get(pod_set.name, {})
        if any(kept.get(res, flavor_name) != flavor_name for res in group.covered):
            return f"flavor {flavor_name} is not the one of the replaced workload slice"
        if self.state is not None:
            mismatch = topology_assigner.flavor_mismatch(
                self.state, self.cq, pod_set, flavor, group.covered
            )
            if mismatch is not None:
                return mismatch
        if flavor.node_taints:
            taint = first_untolerated_taint(
                flavor.node_taints, (*pod_set.tolerations, *flavor.tolerations)
            )
            if taint is not None:
                return f"untolerated taint {format_taint(taint)} in flavor {flavor_name}"
        if (
            pod_set.node_selector or pod_set.required_node_affinity
        ) and not flavor_affinity_matches(
            pod_set.node_selector,
            pod_set.required_node_affinity,
            group.label_keys,
            flavor.node_labels,
        ):
            return f"flavor {flavor_name} doesn't match node affinity"
        return None

    def _fits_quota(
        self, fr: FlavorResource, assumed: int, request: int
    ) -> tuple[Possibility, int, str | None]:
        cq = self.cq
        node = cq.node
        res, flavor = fr[1], fr[0]
        val = assumed + request
        max_capacity = potential_available(node, fr)
        if val > max_capacity:
            return (
                Possibility.NO_FIT,
                0,
                f"insufficient quota for {res} in flavor {flavor}, previously considered "
                f"podsets requests ({format_quantity(res, assumed)}) + current podset request "
                f"({format_quantity(res, request)}) > maximum capacity "
                f"({format_quantity(res, max_capacity)})",
            )
        borrow, may_reclaim_higher = lowest_fitting_subtree_height(node, fr, val)
        avail = max(0, available(node, fr))
        if val <= avail:
            return Possibility.FIT, borrow, None
        reason = (
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{format_quantity(res, val - avail)} more needed"
        )
        if (
            val <= node.quota(fr).nominal
            or may_reclaim_higher
            or self._can_preempt_while_borrowing()
        ):
            possibility, borrow_after = self.oracle(cq, self.ws, fr, val)
            return possibility, borrow_after, reason
        return Possibility.NO_FIT, borrow, reason

    def _can_preempt_while_borrowing(self) -> bool:
        preemption = self.cq.spec.preemption
        if preemption.borrow_within_cohort.policy != PreemptionPolicy.NEVER:
            return True
        return self.fair_sharing and preemption.reclaim_within_cohort != PreemptionPolicy.NEVER
