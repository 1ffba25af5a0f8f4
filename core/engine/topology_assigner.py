"""Topology-aware scheduling inside flavor assignment, as upstream's flavor assigner does it.

After quota picked flavors, every pod set that asks for TAS (or is in a TAS-only
ClusterQueue, where TAS is implied) is placed in its TAS flavor's topology:

- quota Fit: place against current usage; a pod set that fits no domain gets upstream's
  reason ("topology \"t\" doesn't allow to fit any of 4 pod(s)") and becomes Preempt;
- Preempt: place as if every TAS workload were gone; if even that fails it is NoFit,
  otherwise every TAS pod set is Preempt, so preemption looks at TAS flavors too;
- once victims are known, the placement is recomputed without them (or, without
  victims, against an empty topology, so the capacity can be held for the cycle).

Under a MultiKueue admission check the placement is left to the worker
(`delayedTopologyRequest: Pending`), as upstream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.api.topology_assignment import DelayedTopologyRequestState
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.flavor_mode import Mode
from core.engine.model import PodSet, ResourceFlavor
from core.engine.topology_placement import (
    PlacementRequest,
    PlacementResult,
    TopologyPlacer,
    has_levels,
)
from core.engine.topology_state import TasUsage, tas_usage_of

if TYPE_CHECKING:
    from core.engine.flavor_assignment import Assignment
    from core.engine.workload_state import WorkloadState

NO_TAS_INFORMATION = "workload requires Topology, but there is no TAS cache information"
NO_TAS_FLAVOR = "no TAS flavor assigned"


def tas_implied(ps: PodSet, cq: ClusterQueueState) -> bool:
    """TAS without asking: the pod set says nothing and every flavor of the CQ is TAS."""
    request = ps.topology_request
    return (request is None or not request.explicit) and cq.tas_only


def tas_requested(ps: PodSet, cq: ClusterQueueState) -> bool:
    request = ps.topology_request
    return (request is not None and request.explicit) or cq.tas_only


def flavor_mismatch(
    state: ClusterState,
    cq: ClusterQueueState,
    ps: PodSet,
    flavor: ResourceFlavor,
    covered: Iterable[str],
) -> str | None:
    """Why a flavor cannot serve a pod set as far as TAS goes (None: it can)."""
    if tas_requested(ps, cq):
        if tas_implied(ps, cq):
            return None
        if flavor.topology_name is None:
            if not set(ps.requests) & set(covered):
                # It may still give quota for resources TAS does not track.
                return None
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        placer = state.topology.placer(flavor)
        if placer is None:
            return f'Flavor "{flavor.name}" information missing in TAS cache'
        if not has_levels(placer.tree, ps.topology_request):
            return f'Flavor "{flavor.name}" does not contain the requested level'
        return None
    if flavor.topology_name is not None:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    return None


class TasRequests:
    """A workload's placement requests, per TAS flavor, in pod set order."""

    __slots__ = ("by_flavor", "on_empty", "pod_sets")

    def __init__(self) -> None:
        self.by_flavor: dict[str, list[PlacementRequest]] = {}
        self.pod_sets: list[str] = []
        # The placement on an empty topology, once made (it ignores usage).
        self.on_empty: PlacementResult | None = None

    def __bool__(self) -> bool:
        return bool(self.pod_sets)

    def add(self, flavor: str, request: PlacementRequest) -> None:
        self.by_flavor.setdefault(flavor, []).append(request)
        self.pod_sets.append(request.pod_set)


def _placer(state: ClusterState, flavor_name: str) -> TopologyPlacer | None:
    flavor = state.flavors.get(flavor_name)
    return state.topology.placer(flavor) if flavor is not None else None


def place(state: ClusterState, requests: TasRequests, *, simulate_empty: bool) -> PlacementResult:
    """Place every request, flavor by flavor; the first failure ends the search."""
    result = PlacementResult()
    for flavor, reqs in requests.by_flavor.items():
        placer = _placer(state, flavor)
        if placer is None:
            result.failed_pod_set = reqs[0].pod_set
            result.reason = NO_TAS_INFORMATION
            return result
        found = placer.place(reqs, simulate_empty=simulate_empty)
        result.assignments.update(found.assignments)
        if not found.ok:
            result.failed_pod_set = found.failed_pod_set
            result.reason = found.reason
            return result
    return result


def assignment_usage(assignment: Assignment) -> list[TasUsage]:
    """What an assignment's topology placements would hold, domain by domain."""
    out: list[TasUsage] = []
    for psr in assignment.pod_sets:
        if psr.topology is None or psr.tas_flavor is None:
            continue
        out.extend(tas_usage_of(psr.tas_flavor, psr.topology, psr.per_pod))
    return out


def still_fits(state: ClusterState, assignment: Assignment) -> bool:
    """Whether the assignment's placements fit the leaves' current remaining capacity."""
    for psr in assignment.pod_sets:
        if psr.topology is None or psr.tas_flavor is None:
            continue
        placer = _placer(state, psr.tas_flavor)
        if placer is None:
            return False
        domains = [
            (placer.tree.leaf_key(d.values), psr.per_pod, d.count) for d in psr.topology.domains
        ]
        if not placer.fits(domains):
            return False
    return True


def collect(assignment: Assignment, ws: WorkloadState, cq: ClusterQueueState) -> TasRequests:
    """The workload's TAS requests; pod sets that cannot be placed get their error."""
    requests = TasRequests()
    for idx, psr in enumerate(assignment.pod_sets):
        ps = ws.spec.pod_sets[idx]
        if not tas_requested(ps, cq) or psr.error is not None or psr.count == 0:
            continue
        if not cq.tas_flavors:
            assignment.set_error(psr, NO_TAS_INFORMATION)
            continue
        tas = sorted({c.flavor for c in psr.flavors.values() if c.flavor in cq.tas_flavors})
        if not tas:
            assignment.set_error(psr, NO_TAS_FLAVOR)
            continue
        if len(tas) > 1:
            assignment.set_error(psr, f"more than one TAS flavor assigned: {', '.join(tas)}")
            continue
        if cq.multikueue:
            # The worker places the pods; the hub only reserves quota.
            psr.delayed = DelayedTopologyRequestState.PENDING
            continue
        psr.tas_flavor = tas[0]
        psr.per_pod = dict(ws.pod_sets[idx].per_pod)
        requests.add(
            tas[0],
            PlacementRequest(
                pod_set=ps.name,
                count=psr.count,
                per_pod=psr.per_pod,
                request=ps.topology_request,
                implied=tas_implied(ps, cq),
                node_selector=ps.node_selector,
                required_node_affinity=ps.required_node_affinity,
                tolerations=ps.tolerations,
            ),
        )
    return requests


def _record(assignment: Assignment, result: PlacementResult) -> None:
    for psr in assignment.pod_sets:
        if psr.tas_flavor is not None:
            psr.topology = result.assignments.get(psr.name)


def after_quota(state: ClusterState, assignment: Assignment, requests: TasRequests) -> None:
    """Place the TAS pod sets once quota is assigned (upstream's end of assignFlavors)."""
    if not requests:
        return
    if assignment.mode() == Mode.FIT:
        result = place(state, requests, simulate_empty=False)
        if not result.ok:
            psr = assignment.pod_set(result.failed_pod_set or "")
            psr.reasons.append(result.reason)
            assignment.set_mode(psr, Mode.PREEMPT)
        else:
            _record(assignment, result)
    if assignment.mode() == Mode.PREEMPT:
        result = place(state, requests, simulate_empty=True)
        requests.on_empty = result
        if not result.ok:
            assignment.set_mode(assignment.pod_set(result.failed_pod_set or ""), Mode.NO_FIT)
        else:
            # Fragmented capacity needs preemption even where quota alone would fit.
            for name in requests.pod_sets:
                assignment.set_mode(assignment.pod_set(name), Mode.PREEMPT)


def after_targets(
    state: ClusterState, assignment: Assignment, requests: TasRequests, *, have_targets: bool
) -> None:
    """Placement for a preempting workload: without its victims (the caller removed their
    usage), or on an empty topology to hold capacity while it waits."""
    if not requests or assignment.mode() != Mode.PREEMPT:
        return
    if have_targets:
        _record(assignment, place(state, requests, simulate_empty=False))
    else:
        # The empty-topology placement does not depend on usage: reuse the one made.
        empty = requests.on_empty or place(state, requests, simulate_empty=True)
        _record(assignment, empty)
