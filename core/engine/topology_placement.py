"""Topology-aware placement of pod sets in one TAS flavor, by upstream Kueue's algorithm.

Phase 1 counts, for every domain, how many pods (and slices) of the request fit: leaves
from their remaining capacity, parents as the sum of their children. Phase 2 picks the
domains: at the requested level the one that fits all pods with the least to spare
(best fit); when none does, a `preferred` request climbs a level and an `unconstrained`
one takes several domains, while a `required` one fails. It then walks down level by
level, at each level again using as few domains as it can, best fit for the last one.
Unconstrained requests (and TAS implied by a TAS-only ClusterQueue) fill the domains
with the least free capacity first instead (upstream's "mixed" profile).

Ties are broken as upstream does: more slices first (fewer for least-free), then fewer
pods (less waste), then the domain's label values. A pod set group (a leader and its
workers, `podset-group-name`) is placed together, the leader in one of the workers'
domains. The messages match upstream's word for word ("topology \"t\" allows to fit only
1 out of 2 pod(s)").

Not ported (upstream features off by default or later work here): balanced placement,
preferred node affinity scores, failed-node replacement, elastic workload slices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.engine.model import (
    NodeSelectorTerm,
    SliceLayer,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyDomainAssignment,
    TopologyRequest,
)
from core.engine.node_matching import (
    first_untolerated_taint,
    format_taint,
    node_affinity_matches,
)
from core.engine.topology_tree import Domain, Leaf, TopologyTree

_MAX_INT32 = (1 << 31) - 1
_EMPTY: Mapping[str, int] = {}

Capacity = Mapping[str, int]
DomainUsage = dict[str, dict[str, int]]
"""Usage per leaf key, per resource (pods included)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementRequest:
    """One pod set to place: its pods, per-pod requests and scheduling constraints."""

    pod_set: str
    count: int
    per_pod: Mapping[str, int]
    request: TopologyRequest | None
    implied: bool = False
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_node_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()

    def with_pod(self) -> dict[str, int]:
        """Per-pod requests including the pod itself (`pods: 1`), as nodes count them."""
        out = {res: val for res, val in self.per_pod.items() if res != "pods"}
        out["pods"] = 1
        return out


@dataclass(slots=True)
class PlacementResult:
    """Assignments per pod set, or the first failure (pod set and upstream's reason)."""

    assignments: dict[str, TopologyAssignment] = field(default_factory=dict)
    failed_pod_set: str | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.failed_pod_set is None


def count_in(requests: Mapping[str, int], capacity: Capacity) -> tuple[int, str]:
    """How many times requests fit in capacity, and the limiting resource (ties: by name)."""
    result: int | None = None
    limiting = ""
    for res in sorted(requests):
        val = requests[res]
        # A resource it does not request never limits; overcommitted capacity fits none.
        count = _MAX_INT32 if val == 0 else max(0, min(capacity.get(res, 0) // val, _MAX_INT32))
        if result is None or count < result:
            result, limiting = count, res
    return (result if result is not None else 0), limiting


def usage_of(per_pod: Mapping[str, int], count: int) -> dict[str, int]:
    """Usage of `count` pods in a domain: their requests and the pods themselves."""
    out = {res: val * count for res, val in per_pod.items() if res != "pods"}
    out["pods"] = count
    return out


def add_domain_usage(target: DomainUsage, leaf_key: str, usage: Mapping[str, int]) -> None:
    into = target.setdefault(leaf_key, {})
    for res, val in usage.items():
        into[res] = into.get(res, 0) + val


@dataclass(slots=True)
class _Exclusions:
    """Why nodes were left out, for the no-fit message (upstream's exclusion stats)."""

    total_nodes: int = 0
    node_selector: int = 0
    affinity: int = 0
    topology_domain: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def any(self) -> bool:
        return bool(
            self.node_selector
            or self.affinity
            or self.taints
            or self.topology_domain
            or self.resources
        )

    def format(self) -> str:
        reasons = []
        if self.node_selector:
            reasons.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            reasons.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            reasons.append(f"topologyDomain: {self.topology_domain}")
        reasons.extend(f'taint "{t}": {n}' for t, n in sorted(self.taints.items()))
        reasons.extend(f'resource "{r}": {n}' for r, n in sorted(self.resources.items()))
        reasons.sort()
        return ", ".join(reasons)


@dataclass(slots=True)
class _Params:
    count: int
    leader_count: int
    slice_size: int
    requested_level: int
    slice_level: int
    required: bool
    unconstrained: bool
    slice_size_at_level: dict[int, int]
    layers: tuple[SliceLayer, ...]
    stats: _Exclusions


class _Failed(Exception):
    """A placement that cannot be made; carries upstream's reason."""


def level_key(tree: TopologyTree, request: TopologyRequest | None) -> str | None:
    """The level a request names: required, preferred, top (slices only) or bottom."""
    if request is None:
        return None
    if request.required is not None:
        return request.required
    if request.preferred is not None:
        return request.preferred
    if request.slices:
        return tree.levels[0]
    if request.unconstrained:
        return tree.levels[-1]
    return None


def has_levels(tree: TopologyTree, request: TopologyRequest | None) -> bool:
    """Whether the tree has every level the request names (upstream's HasLevel)."""
    key = level_key(tree, request)
    if key is None or tree.level_index(key) is None:
        return False
    layers = request.slices if request is not None else ()
    return all(tree.level_index(layer.level) is not None for layer in layers)


class TopologyPlacer:
    """Places pod sets in one flavor's tree given each leaf's remaining capacity.

    `free` is each leaf's capacity after non-TAS pods; `usage` is what admitted TAS
    workloads hold per leaf. `simulate_empty` ignores `usage` (as if every TAS workload
    were preempted), to tell "never fits" from "fits after preemption".
    """

    __slots__ = ("_remaining", "free", "name", "tolerations", "tree", "usage")

    def __init__(
        self,
        topology_name: str,
        tree: TopologyTree,
        free: Mapping[str, Capacity],
        usage: Mapping[str, Capacity],
        tolerations: Sequence[Toleration] = (),
    ) -> None:
        self.name = topology_name
        self.tree = tree
        self.free = free
        self.usage = usage
        self.tolerations = tuple(tolerations)
        # Leaf key -> free minus usage, kept until `forget` says either changed.
        self._remaining: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ capacity
    def remaining(self, leaf_key: str, simulate_empty: bool = False) -> dict[str, int]:
        """A leaf's capacity left for TAS pods (a fresh dict the caller may change)."""
        if simulate_empty:
            return dict(self.free.get(leaf_key, _EMPTY))
        return dict(self._cached_remaining(leaf_key))

    def _cached_remaining(self, leaf_key: str) -> Mapping[str, int]:
        found = self._remaining.get(leaf_key)
        if found is None:
            found = dict(self.free.get(leaf_key, _EMPTY))
            for res, val in self.usage.get(leaf_key, _EMPTY).items():
                found[res] = found.get(res, 0) - val
            self._remaining[leaf_key] = found
        return found

    def forget(self, leaf_key: str | None = None) -> None:
        """Usage of a leaf (None: free capacity of all) changed: drop what was cached."""
        if leaf_key is None:
            self._remaining.clear()
        else:
            self._remaining.pop(leaf_key, None)

    def fits(self, domains: Iterable[tuple[str, Mapping[str, int], int]]) -> bool:
        """Whether (leaf key, per-pod requests, count) placements still fit their leaves."""
        for leaf_key, per_pod, count in domains:
            if leaf_key not in self.tree.leaves:
                return False
            with_pod = {res: val for res, val in per_pod.items() if res != "pods"}
            with_pod["pods"] = 1
            if count_in(with_pod, self.remaining(leaf_key))[0] < count:
                return False
        return True

    # ------------------------------------------------------------------ entry point
    def place(
        self,
        requests: Sequence[PlacementRequest],
        *,
        simulate_empty: bool = False,
        assumed: DomainUsage | None = None,
    ) -> PlacementResult:
        """Assignments for all requests of this flavor; pod set groups go together."""
        result = PlacementResult()
        assumed = {} if assumed is None else assumed
        groups: dict[str, list[PlacementRequest]] = {}
        for idx, req in enumerate(requests):
            group = req.request.group_name if req.request is not None else None
            groups.setdefault(group if group is not None else str(idx), []).append(req)
        for members in groups.values():
            leader, workers = _leader_and_workers(members)
            try:
                found = self._place_one(workers, leader, assumed, simulate_empty)
            except _Failed as failed:
                for member in members:
                    result.failed_pod_set = result.failed_pod_set or member.pod_set
                result.reason = str(failed)
                return result
            for member in members:
                assignment = found[member.pod_set]
                result.assignments[member.pod_set] = assignment
                self._assume(assumed, assignment, member)
        return result

    def _assume(
        self, assumed: DomainUsage, assignment: TopologyAssignment, req: PlacementRequest
    ) -> None:
        for dom in assignment.domains:
            add_domain_usage(
                assumed, self.tree.leaf_key(dom.values), usage_of(req.per_pod, dom.count)
            )

    # ------------------------------------------------------------------ one group
    def _place_one(
        self,
        workers: PlacementRequest,
        leader: PlacementRequest | None,
        assumed: DomainUsage,
        simulate_empty: bool,
    ) -> dict[str, TopologyAssignment]:
        tree = self.tree
        request = workers.request
        layers = request.slices if request is not None else ()
        slice_size = 1
        if layers:
            slice_size = layers[0].size
            if slice_size <= 0:
                raise _Failed("slice topology requested, but slice size not provided")
        required = request is not None and request.required is not None
        unconstrained = (
            (request is not None and request.unconstrained is True)
            or workers.implied
            or (
                request is not None
                and request.required is None
                and request.preferred is None
                and bool(layers)
            )
        )
        key = level_key(tree, request)
        if key is None and workers.implied:
            key = tree.levels[-1]
        if key is None:
            raise _Failed("topology level not specified")
        requested_level = tree.level_index(key)
        if requested_level is None:
            raise _Failed(f"no requested topology level: {key}")
        slice_key = layers[0].level if layers else tree.levels[-1]
        slice_level = tree.level_index(slice_key)
        if slice_level is None:
            raise _Failed(f"no requested topology level for slices: {slice_key}")
        if requested_level > slice_level:
            raise _Failed(f"podset slice topology {slice_key} is above the podset topology {key}")
        size_at_level = self._slice_size_at_level(layers, slice_size, slice_level)
        params = _Params(
            count=workers.count,
            leader_count=1 if leader is not None else 0,
            slice_size=slice_size,
            requested_level=requested_level,
            slice_level=slice_level,
            required=required,
            unconstrained=unconstrained,
            slice_size_at_level=size_at_level,
            layers=layers if size_at_level else (),
            stats=_Exclusions(),
        )
        # Phase 1: how many pods and slices fit in every domain.
        self._fill_in_counts(workers, leader, assumed, simulate_empty, params)
        # Phase 2a: the level and domains that take the whole request.
        fit_level, fit = self._find_level_with_fit_domains(requested_level, params)
        # Phase 2b: down the tree, as few domains as possible at every level.
        fit = self._update_counts_to_minimum(
            fit, params.count, params.leader_count, slice_size, unconstrained, True
        )
        last_level = len(tree.levels) - 1
        current = fit_level
        while current < min(last_level, slice_level):
            lower = self._sorted([c for d in fit for c in d.children], unconstrained)
            fit = self._update_counts_to_minimum(
                lower, params.count, params.leader_count, slice_size, unconstrained, True
            )
            current += 1
        while current < last_level:
            size_on_level = slice_size
            if current >= slice_level:
                size_on_level = size_at_level.get(current + 1, 1)
            next_fit: list[Domain] = []
            for dom in fit:
                lower = self._sorted(dom.children, unconstrained)
                if size_on_level > 1:
                    for child in lower:
                        child.slice_count = child.pod_count // size_on_level
                        child.slice_count_with_leader = child.pod_count_with_leader // size_on_level
                next_fit.extend(
                    self._update_counts_to_minimum(
                        lower,
                        dom.pod_count,
                        dom.leader_count,
                        size_on_level,
                        unconstrained,
                        size_on_level > 1,
                    )
                )
            fit = next_fit
            current += 1
        out: dict[str, TopologyAssignment] = {}
        if leader is not None:
            leader_domains: list[Domain] = []
            worker_domains: list[Domain] = []
            for dom in fit:
                if dom.leader_count > 0:
                    copy = dom.copy_counts()
                    copy.pod_count = dom.leader_count
                    leader_domains.append(copy)
                if dom.pod_count > 0:
                    worker_domains.append(dom)
            out[leader.pod_set] = self._build(leader_domains)
            fit = worker_domains
        out[workers.pod_set] = self._build(fit)
        return out

    def _slice_size_at_level(
        self, layers: tuple[SliceLayer, ...], slice_size: int, slice_level: int
    ) -> dict[int, int]:
        """Slice size per level for the inner slice layers (multi-layer requests)."""
        out: dict[int, int] = {}
        prev_size, prev_level = slice_size, slice_level
        for layer in layers[1:]:
            inner = self.tree.level_index(layer.level)
            if inner is None:
                raise _Failed(
                    f"no requested topology level for additional slice layer: {layer.level}"
                )
            if inner <= prev_level:
                raise _Failed(
                    f"additional slice layer topology {layer.level} must be at a lower level "
                    f"than {self.tree.levels[prev_level]}"
                )
            if layer.size <= 0 or prev_size % layer.size != 0:
                raise _Failed(
                    f"additional slice layer size {layer.size} must evenly divide parent "
                    f"layer size {prev_size}"
                )
            for lvl in range(prev_level + 1, inner + 1):
                out[lvl] = layer.size
            prev_size, prev_level = layer.size, inner
        return out

    # ------------------------------------------------------------------ phase 1
    def _feasible_leaves(self, req: PlacementRequest, stats: _Exclusions) -> Iterable[Leaf]:
        leaves = self.tree.leaves.values()
        if not self.tree.hostname_lowest or (
            not self.tree.tainted and not req.node_selector and not req.required_node_affinity
        ):
            # Nothing to filter on: every leaf is a candidate.
            stats.total_nodes += len(self.tree.leaves)
            return leaves
        tolerations = (*req.tolerations, *self.tolerations)
        feasible = []
        for leaf in leaves:
            stats.total_nodes += 1
            node = leaf.node
            if node is None:
                feasible.append(leaf)
                continue
            taint: Taint | None = first_untolerated_taint(node.taints, tolerations)
            if taint is not None:
                text = format_taint(taint)
                stats.taints[text] = stats.taints.get(text, 0) + 1
                continue
            if any(node.labels.get(k) != v for k, v in req.node_selector.items()):
                stats.node_selector += 1
                continue
            if req.required_node_affinity and not node_affinity_matches(
                req.required_node_affinity, node.labels
            ):
                stats.affinity += 1
                continue
            feasible.append(leaf)
        return feasible

    def _fill_in_counts(
        self,
        workers: PlacementRequest,
        leader: PlacementRequest | None,
        assumed: DomainUsage,
        simulate_empty: bool,
        params: _Params,
    ) -> None:
        """Phase 1 for the leaves (the hot loop: no dict copies unless a leader needs one),
        then bottom-up sums; every counter of every domain is written, so none is stale."""
        for leaf in self.tree.leaves.values():
            dom = leaf.domain
            dom.pod_count = dom.pod_count_with_leader = dom.leader_count = 0
            dom.slice_count = dom.slice_count_with_leader = 0
        requests = sorted((res, val) for res, val in workers.with_pod().items() if val > 0)
        leader_requests = leader.with_pod() if leader is not None else None
        stats = params.stats
        free, empty = self.free, _EMPTY
        cached = self._remaining
        for leaf in self._feasible_leaves(workers, stats):
            key = leaf.key
            if simulate_empty:
                have = free.get(key, empty)
            else:
                have = cached.get(key) or self._cached_remaining(key)
            taken = assumed.get(key, empty) if assumed else empty
            count, limiting = _MAX_INT32, ""
            for res, val in requests:
                cap = have.get(res, 0) - taken.get(res, 0) if taken else have.get(res, 0)
                fit = cap // val if cap > 0 else 0
                if fit < count:
                    count, limiting = fit, res
                    if fit == 0:
                        break
            dom = leaf.domain
            dom.pod_count = count
            if count == 0 and limiting:
                stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
            if leader_requests is None:
                dom.pod_count_with_leader = count
                continue
            remaining = self.remaining(key, simulate_empty)
            for res, val in taken.items():
                remaining[res] = remaining.get(res, 0) - val
            if count_in(leader_requests, remaining)[0] > 0:
                dom.leader_count = 1
                for res, val in leader_requests.items():
                    remaining[res] = remaining.get(res, 0) - val
            dom.pod_count_with_leader = count_in(dict(requests), remaining)[0]
        for root in self.tree.roots:
            self._fill_helper(root, params, 0)

    def _fill_helper(self, dom: Domain, params: _Params, level: int) -> None:
        slice_size = params.slice_size
        if not dom.children:
            if level == params.slice_level:
                dom.slice_count = dom.pod_count // slice_size
                dom.slice_count_with_leader = dom.pod_count_with_leader // slice_size
            return
        leader_required = params.leader_count > 0
        children_capacity = 0
        slice_capacity = 0
        contributes = False
        min_pod_diff = _MAX_INT32
        min_slice_diff = _MAX_INT32
        leader_count = 0
        inner = params.slice_size_at_level.get(level + 1)
        child_is_slice_level = level + 1 == params.slice_level
        for child in dom.children:
            if child.children:
                self._fill_helper(child, params, level + 1)
            elif child_is_slice_level:
                child.slice_count = child.pod_count // slice_size
                child.slice_count_with_leader = child.pod_count_with_leader // slice_size
            pods = child.pod_count
            pods_with_leader = child.pod_count_with_leader
            if inner:
                pods = pods // inner * inner
                pods_with_leader = pods_with_leader // inner * inner
            children_capacity += pods
            slice_capacity += child.slice_count
            if not leader_required or child.leader_count > 0:
                contributes = True
                if pods - pods_with_leader < min_pod_diff:
                    min_pod_diff = pods - pods_with_leader
                slice_diff = child.slice_count - child.slice_count_with_leader
                if slice_diff < min_slice_diff:
                    min_slice_diff = slice_diff
            if child.leader_count > leader_count:
                leader_count = child.leader_count
        dom.pod_count = children_capacity
        slices_with_leader = 0
        if contributes:
            dom.pod_count_with_leader = children_capacity - min_pod_diff
            slices_with_leader = slice_capacity - min_slice_diff
        else:
            dom.pod_count_with_leader = 0
        dom.leader_count = leader_count
        if level == params.slice_level:
            slice_capacity = dom.pod_count // slice_size
            slices_with_leader = dom.pod_count_with_leader // slice_size
        dom.slice_count = slice_capacity
        dom.slice_count_with_leader = slices_with_leader

    # ------------------------------------------------------------------ ordering
    @staticmethod
    def _sorted(domains: Iterable[Domain], least_free: bool) -> list[Domain]:
        """Most slices first (least for least-free), then fewest pods, then label values."""
        if least_free:
            return sorted(domains, key=lambda d: (d.slice_count, d.pod_count, d.values))
        return sorted(domains, key=lambda d: (-d.slice_count, d.pod_count, d.values))

    @staticmethod
    def _sorted_with_leader(domains: Iterable[Domain], least_free: bool) -> list[Domain]:
        sign = 1 if least_free else -1
        return sorted(
            domains,
            key=lambda d: (
                -d.leader_count,
                sign * d.slice_count_with_leader,
                d.pod_count_with_leader,
                d.values,
            ),
        )

    @staticmethod
    def _best_fit_by(
        domains: Sequence[Domain],
        needed: int,
        count_of: Callable[[Domain], int],
        leader_count: int,
    ) -> Domain:
        """The first domain with the smallest count still >= needed (else the first)."""
        best = domains[0]
        best_count = _MAX_INT32
        found = False
        for dom in domains:
            if dom.leader_count < leader_count:
                continue
            count = count_of(dom)
            if needed <= count < best_count:
                best, best_count, found = dom, count, True
        return best if found else domains[0]

    def _best_fit_pods(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders > 0:
            return self._best_fit_by(domains, needed, _pods_with_leader, leaders)
        return self._best_fit_by(domains, needed, _pods, leaders)

    def _best_fit_slices(self, domains: Sequence[Domain], needed: int, leaders: int) -> Domain:
        if leaders > 0:
            return self._best_fit_by(domains, needed, _slices_with_leader, leaders)
        return self._best_fit_by(domains, needed, _slices, leaders)

    # ------------------------------------------------------------------ phase 2a
    def _not_fit(self, fit: int, total: int, params: _Params, level: int) -> _Failed:
        if params.layers:
            return _Failed(self._multi_layer_not_fit(level, params))
        unit = "pod" if params.slice_size == 1 else "slice"
        if fit == 0:
            text = f'topology "{self.name}" doesn\'t allow to fit any of {total} {unit}(s)'
        else:
            text = f'topology "{self.name}" allows to fit only {fit} out of {total} {unit}(s)'
        stats = params.stats
        if stats.any():
            text += f". Total nodes: {stats.total_nodes}; excluded: {stats.format()}"
        return _Failed(text)

    def _multi_layer_not_fit(self, level: int, params: _Params) -> str:
        text = f'topology "{self.name}" doesn\'t allow to fit'
        candidates = list(self.tree.by_level[level].values())
        if not candidates:
            return text
        best = min(candidates, key=lambda d: (-d.slice_count, d.id))
        for layer in params.layers:
            target = self.tree.level_index(layer.level)
            if target is None:
                continue
            needed = params.count // layer.size
            fit = self._slices_in_subtree(best, level, target, layer.size)
            text += f"; {fit}/{needed} slice(s) fit on level {layer.level}"
        stats = params.stats
        if stats.any():
            text += f". Total nodes: {stats.total_nodes}; excluded: {stats.format()}"
        return text

    def _slices_in_subtree(self, dom: Domain, level: int, target: int, size: int) -> int:
        if level == target:
            return dom.pod_count // size
        return sum(self._slices_in_subtree(c, level + 1, target, size) for c in dom.children)

    def _find_level_with_fit_domains(self, level: int, params: _Params) -> tuple[int, list[Domain]]:
        domains = list(self.tree.by_level[level].values())
        if not domains:
            raise _Failed(f"no topology domains at level: {self.tree.levels[level]}")
        least_free = params.unconstrained
        ordered = self._sorted_with_leader(domains, least_free)
        top = ordered[0]
        slice_count = params.count // params.slice_size
        leaders = params.leader_count
        if (
            not least_free
            and top.slice_count_with_leader >= slice_count
            and top.leader_count >= leaders
        ):
            top = self._best_fit_slices(ordered, slice_count, leaders)
        if least_free:
            for candidate in ordered:
                capacity = candidate.slice_count
                if leaders > 0:
                    if candidate.leader_count < leaders:
                        continue
                    capacity = candidate.slice_count_with_leader
                if capacity >= slice_count:
                    return level, [candidate]
            if params.required:
                raise self._not_fit(ordered[-1].pod_count, slice_count, params, level)
        if top.slice_count_with_leader >= slice_count and top.leader_count >= leaders:
            return level, [top]
        if params.required:
            raise self._not_fit(top.slice_count, slice_count, params, level)
        if level > 0 and not params.unconstrained:
            return self._find_level_with_fit_domains(level - 1, params)
        results: list[Domain] = []
        remaining_slices = slice_count
        remaining_leaders = leaders
        ordered = self._prioritize_leader_domain(
            ordered, params.count, leaders, params.slice_size, True
        )
        idx = 0
        while remaining_leaders > 0 and idx < len(ordered) and ordered[idx].leader_count > 0:
            dom = ordered[idx]
            if not least_free and dom.slice_count_with_leader >= remaining_slices:
                dom = self._best_fit_slices(ordered[idx:], remaining_slices, remaining_leaders)
            results.append(dom)
            remaining_leaders -= dom.leader_count
            remaining_slices -= dom.slice_count_with_leader
            idx += 1
        if remaining_leaders > 0:
            raise self._not_fit(leaders - remaining_leaders, slice_count, params, level)
        rest = self._sorted(ordered[idx:], least_free)
        for pos, dom in enumerate(rest):
            if remaining_slices <= 0:
                break
            if not least_free and dom.slice_count >= remaining_slices:
                dom = self._best_fit_slices(rest[pos:], remaining_slices, 0)
            results.append(dom)
            remaining_slices -= dom.slice_count
        if remaining_slices > 0:
            raise self._not_fit(slice_count - remaining_slices, slice_count, params, level)
        return level, results

    # ------------------------------------------------------------------ phase 2b
    def _prioritize_leader_domain(
        self, domains: list[Domain], count: int, leaders: int, slice_size: int, slices: bool
    ) -> list[Domain]:
        """Put first a leader-capable domain whose leader costs no more than the slack."""
        if leaders == 0 or len(domains) < 2:
            return domains
        required = count // slice_size if slices else count
        available = sum(d.slice_count if slices else d.pod_count for d in domains)
        for i, dom in enumerate(domains):
            if dom.leader_count < leaders:
                continue
            if slices:
                penalty = dom.slice_count - dom.slice_count_with_leader
            else:
                penalty = dom.pod_count - dom.pod_count_with_leader
            if available - penalty < required:
                continue
            if i == 0:
                return domains
            return [dom, *domains[:i], *domains[i + 1 :]]
        return domains

    def _consume_with_leaders(
        self,
        dom: Domain,
        rest: Sequence[Domain],
        remaining: list[int],
        least_free: bool,
        slice_size: int,
        slices: bool,
    ) -> tuple[Domain, bool]:
        """Take pods (or slices) and leaders from dom; `remaining` is [primary, leaders]."""
        primary, leaders = remaining
        with_leader = dom.slice_count_with_leader if slices else dom.pod_count_with_leader
        if not least_free and with_leader >= primary and dom.leader_count >= leaders:
            if slices:
                dom = self._best_fit_slices(rest, primary, leaders)
                with_leader = dom.slice_count_with_leader
            else:
                dom = self._best_fit_pods(rest, primary, leaders)
                with_leader = dom.pod_count_with_leader
        if with_leader >= primary and dom.leader_count >= leaders:
            if slices:
                dom.slice_count = primary
            dom.leader_count = leaders
            dom.pod_count = primary * slice_size
            return dom, True
        with_leader = min(with_leader, primary)
        if slices:
            dom.slice_count_with_leader = with_leader
            dom.slice_count = with_leader
        else:
            dom.pod_count_with_leader = with_leader
        dom.leader_count = min(dom.leader_count, leaders)
        dom.pod_count = with_leader * slice_size
        remaining[1] -= dom.leader_count
        remaining[0] -= with_leader
        return dom, False

    def _update_counts_to_minimum(
        self,
        domains: list[Domain],
        count: int,
        leaders: int,
        slice_size: int,
        least_free: bool,
        slices: bool,
    ) -> list[Domain]:
        """Set each chosen domain's pod count: fill in order, best fit for the last one."""
        domains = self._prioritize_leader_domain(domains, count, leaders, slice_size, slices)
        result: list[Domain] = []
        remaining = [count // slice_size if slices else count, leaders]
        for i, dom in enumerate(domains):
            if remaining[1] > 0:
                taken, done = self._consume_with_leaders(
                    dom, domains[i:], remaining, least_free, slice_size if slices else 1, slices
                )
                result.append(taken)
                if done:
                    return result
                continue
            primary = remaining[0]
            if slices:
                if not least_free and dom.slice_count >= primary:
                    dom = self._best_fit_slices(domains[i:], primary, 0)
                dom.leader_count = 0
                if dom.slice_count >= primary:
                    dom.pod_count = primary * slice_size
                    dom.slice_count = primary
                    result.append(dom)
                    return result
                dom.pod_count = dom.slice_count * slice_size
                remaining[0] -= dom.slice_count
                result.append(dom)
                continue
            if not least_free and dom.pod_count >= primary:
                dom = self._best_fit_pods(domains[i:], primary, 0)
            dom.leader_count = 0
            if dom.pod_count >= primary:
                dom.pod_count = primary
                result.append(dom)
                return result
            remaining[0] -= dom.pod_count
            result.append(dom)
        # Upstream logs "code assumptions violated" here and places nothing.
        return []

    # ------------------------------------------------------------------ result
    def _build(self, domains: list[Domain]) -> TopologyAssignment:
        tree = self.tree
        start = len(tree.levels) - 1 if tree.hostname_lowest else 0
        chosen = sorted((d for d in domains if d.pod_count > 0), key=lambda d: d.values)
        return TopologyAssignment(
            levels=tree.levels[start:],
            domains=tuple(
                TopologyDomainAssignment(values=d.values[start:], count=d.pod_count) for d in chosen
            ),
        )


def _pods(d: Domain) -> int:
    return d.pod_count


def _pods_with_leader(d: Domain) -> int:
    return d.pod_count_with_leader


def _slices(d: Domain) -> int:
    return d.slice_count


def _slices_with_leader(d: Domain) -> int:
    return d.slice_count_with_leader


def _leader_and_workers(
    members: list[PlacementRequest],
) -> tuple[PlacementRequest | None, PlacementRequest]:
    """In a pod set group of two, the one with fewer pods is the leader (upstream's rule)."""
    workers = members[0]
    leader: PlacementRequest | None = None
    if len(members) > 1:
        leader = members[1]
        if leader.count > workers.count:
            leader, workers = members[0], members[1]
    return leader, workers
