"""A new home for the pods of a failed node, as upstream's failed-node replacement finds it.

When a node of an admitted TAS workload's assignment fails (the manager lists it in
`status.unhealthyNodes`), only the pods assigned to that node move: its domain is taken
out of each pod set's assignment and as many pods are placed again, the rest of the
assignment staying where it is. A `required` request keeps its promise: the new pods
must land in the same domain of the required level as the pods that stay (the same
rack); `preferred` and `unconstrained` ones may land anywhere in the flavor. The failed
node itself is never chosen. The replacement is merged into the remaining domains
(same domain: counts add up) in domain order.

It fails, with upstream's messages, when a remaining domain is gone from the topology
(another node failed too) or no placement fits; upstream then evicts the workload
(TASFailedNodeReplacementFailFast, on by default).

Slice requests keep every slice inside one domain of its slice level, as upstream: when
the pods to move are whole slices they are placed as slices (each in one domain,
anywhere allowed); when they are not, they belong to a slice left incomplete in some
domain, so they are confined to that domain (of the innermost layer they break), placed
as slices of the innermost layer whose size divides them, or as single pods. When no
domain is short of exactly those pods, or the confined domain has no room, there is no
replacement and the workload is evicted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from core.api.topology import HOSTNAME_LABEL
from core.engine.cluster_state import ClusterState
from core.engine.model import (
    Admission,
    NodeSelectorTerm,
    PodSet,
    PodSetAssignment,
    SelectorRequirement,
    TopologyAssignment,
    TopologyDomainAssignment,
    TopologyRequest,
)
from core.engine.topology_placement import PlacementRequest, TopologyPlacer
from core.engine.topology_tree import TopologyTree, domain_id


@dataclass(frozen=True, slots=True)
class Replacement:
    """The outcome: a new admission, or why none could be found."""

    admission: Admission | None
    failure: str = ""


def assigned_nodes(assignment: TopologyAssignment) -> set[str]:
    """Nodes an assignment names (only when its lowest level is the hostname)."""
    if not assignment.levels or assignment.levels[-1] != HOSTNAME_LABEL:
        return set()
    return {d.values[-1] for d in assignment.domains}


def _excluding(terms: tuple[NodeSelectorTerm, ...], node: str) -> tuple[NodeSelectorTerm, ...]:
    """Node affinity terms that also rule out `node` (terms are ORed: each one gets it)."""
    not_node = SelectorRequirement(key=HOSTNAME_LABEL, operator="NotIn", values=(node,))
    if not terms:
        return (NodeSelectorTerm(match_expressions=(not_node,)),)
    return tuple(
        NodeSelectorTerm(match_expressions=(*t.match_expressions, not_node)) for t in terms
    )


def _full_values(tree: TopologyTree, values: tuple[str, ...]) -> tuple[str, ...]:
    """A leaf's label values for every level of the tree (an assignment may keep only the
    hostname)."""
    leaf = tree.leaves.get(tree.leaf_key(values))
    return leaf.domain.values if leaf is not None else values


def _confined_to(
    tree: TopologyTree, request: TopologyRequest | None, remaining: list[TopologyDomainAssignment]
) -> dict[str, str]:
    """Node labels keeping the moved pods in the required domain of the pods that stay."""
    if request is None or request.required is None or not remaining:
        return {}
    level = tree.level_index(request.required)
    if level is None:
        return {}
    values = _full_values(tree, remaining[0].values)
    return dict(zip(tree.levels[: level + 1], values[: level + 1], strict=True))


def _breaks_slices(request: TopologyRequest | None, count: int) -> bool:
    """Whether moving `count` pods leaves a slice of some layer incomplete."""
    return request is not None and any(count % layer.size for layer in request.slices)


def _request_for(request: TopologyRequest | None, count: int) -> TopologyRequest | None:
    """The request the moved pods are placed with: whole slices keep every layer; pods of
    a broken slice keep only the innermost layer whose size divides them (none: single
    pods, unconstrained when slices were all the request asked)."""
    if request is None or not _breaks_slices(request, count):
        return request
    kept = next((layer for layer in reversed(request.slices) if count % layer.size == 0), None)
    slices_only = request.required is None and request.preferred is None
    return dataclasses.replace(
        request,
        slices=() if kept is None else (kept,),
        unconstrained=True if slices_only and kept is None else request.unconstrained,
    )


def _incomplete_slice_domain(
    tree: TopologyTree,
    request: TopologyRequest | None,
    remaining: list[TopologyDomainAssignment],
    count: int,
) -> dict[str, str] | None:
    """Node labels of the domain whose slice the moved pods complete, at the level of the
    innermost layer they break; {} when no slice breaks, None when no domain is short of
    exactly `count` pods (then no placement keeps the slices whole)."""
    if request is None or not _breaks_slices(request, count) or not remaining:
        return {}
    layer = next(layer for layer in reversed(request.slices) if count % layer.size)
    level = tree.level_index(layer.level)
    if level is None:
        return None
    pods: dict[tuple[str, ...], int] = {}
    for domain in remaining:
        values = _full_values(tree, domain.values)[: level + 1]
        pods[values] = pods.get(values, 0) + domain.count
    short = sorted(values for values, n in pods.items() if (n + count) % layer.size == 0)
    if not short:
        return None
    return dict(zip(tree.levels[: level + 1], short[0], strict=True))


def _merge(
    tree: TopologyTree,
    remaining: list[TopologyDomainAssignment],
    moved: tuple[TopologyDomainAssignment, ...],
) -> tuple[TopologyDomainAssignment, ...]:
    merged: list[TopologyDomainAssignment] = []
    ordered = sorted([*remaining, *moved], key=lambda d: domain_id(_full_values(tree, d.values)))
    for domain in ordered:
        if merged and merged[-1].values == domain.values:
            merged[-1] = TopologyDomainAssignment(
                values=domain.values, count=merged[-1].count + domain.count
            )
        else:
            merged.append(domain)
    return tuple(merged)


def replace_in_pod_set(
    placer: TopologyPlacer,
    pod_set: PodSet,
    per_pod: dict[str, int],
    implied: bool,
    assignment: TopologyAssignment,
    node: str,
) -> tuple[TopologyAssignment | None, str]:
    """The pod set's assignment with `node`'s pods placed elsewhere (or a failure)."""
    moved_count = sum(d.count for d in assignment.domains if d.values[-1] == node)
    remaining = [d for d in assignment.domains if d.values[-1] != node]
    for domain in remaining:
        if placer.tree.leaf_key(domain.values) not in placer.tree.leaves:
            return None, (
                "Cannot replace the node, because the existing topologyAssignment is invalid,"
                f" as it contains the stale domain {domain.values[0]}"
            )
    if moved_count == 0:
        return assignment, ""
    topology_request = pod_set.topology_request
    slice_domain = _incomplete_slice_domain(placer.tree, topology_request, remaining, moved_count)
    if slice_domain is None:
        return None, f"cannot find replacement assignment for unhealthy node: {node}"
    request = PlacementRequest(
        pod_set=pod_set.name,
        count=moved_count,
        per_pod=per_pod,
        request=_request_for(topology_request, moved_count),
        implied=implied,
        node_selector={
            **pod_set.node_selector,
            **_confined_to(placer.tree, topology_request, remaining),
            **slice_domain,
        },
        required_node_affinity=_excluding(pod_set.required_node_affinity, node),
        tolerations=pod_set.tolerations,
    )
    result = placer.place([request])
    found = result.assignments.get(pod_set.name)
    if not result.ok:
        return None, result.reason
    if found is None or not found.domains:
        return None, f"cannot find replacement assignment for unhealthy node: {node}"
    return TopologyAssignment(
        levels=assignment.levels, domains=_merge(placer.tree, remaining, found.domains)
    ), ""


def replace_node(
    state: ClusterState,
    admission: Admission,
    pod_sets: dict[str, PodSet],
    per_pod: dict[str, dict[str, int]],
    implied: dict[str, bool],
    node: str,
) -> Replacement | None:
    """A new admission with `node`'s pods moved; None when no assignment names `node`."""
    changed = False
    out: list[PodSetAssignment] = []
    for psa in admission.pod_set_assignments:
        assignment = psa.topology_assignment
        pod_set = pod_sets.get(psa.name)
        if assignment is None or pod_set is None or node not in assigned_nodes(assignment):
            out.append(psa)
            continue
        flavors = sorted(
            {
                f
                for f in psa.flavors.values()
                if (flavor := state.flavors.get(f)) is not None and flavor.topology_name
            }
        )
        flavor = state.flavors.get(flavors[0]) if len(flavors) == 1 else None
        placer = state.topology.placer(flavor) if flavor is not None else None
        if placer is None:
            return Replacement(
                None, f"cannot find replacement assignment for unhealthy node: {node}"
            )
        new, failure = replace_in_pod_set(
            placer,
            pod_set,
            per_pod.get(psa.name, {}),
            implied.get(psa.name, False),
            assignment,
            node,
        )
        if new is None:
            return Replacement(None, failure)
        changed = True
        out.append(dataclasses.replace(psa, topology_assignment=new))
    if not changed:
        return None
    return Replacement(dataclasses.replace(admission, pod_set_assignments=tuple(out)))
