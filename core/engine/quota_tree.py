"""The quota tree: one node type for ClusterQueues and Cohorts, pure functions over it.

Every ClusterQueue and every Cohort is a `QuotaNode`. A node keeps, per (flavor, resource)
pair ("fr"), its own quota (nominal, borrowingLimit, lendingLimit), the quota its subtree
brings (`subtree_quota`) and the usage that counts against it (`usage`). ClusterQueues
are leaves; Cohorts pool what their children lend. The math follows upstream Kueue
(scheduling.md §3):

- `local_quota`: capacity kept back from the parent by a lendingLimit; only this subtree
  may use it. Zero when there is no lendingLimit.
- a Cohort's `subtree_quota` = own nominal + Σ (child.subtree_quota - child.local_quota);
  a ClusterQueue's is its nominal.
- a Cohort's `usage` = Σ max(0, child.usage - child.local_quota): what children take
  beyond what they keep locally.

Usage changes walk up the tree only as far as they spill past local quota, so adding or
removing a workload costs O(depth) per fr.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

FlavorResource = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota a node declares for one fr; limits are None when unset."""

    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


_NO_QUOTA = Quota()


class QuotaNode:
    """A ClusterQueue (leaf) or a Cohort (inner node) of the quota tree."""

    __slots__ = (
        "child_cohorts",
        "child_cqs",
        "fair_weight",
        "is_cohort",
        "local_quota",
        "name",
        "parent",
        "quotas",
        "subtree_quota",
        "usage",
    )

    def __init__(self, name: str, *, is_cohort: bool) -> None:
        self.name = name
        self.is_cohort = is_cohort
        # The cohort above this node, None for a root (or a CQ without cohort).
        self.parent: QuotaNode | None = None
        # Children, kept sorted by name so that every walk is deterministic.
        self.child_cohorts: list[QuotaNode] = []
        self.child_cqs: list[QuotaNode] = []
        # Quotas declared by this node's own spec.
        self.quotas: dict[FlavorResource, Quota] = {}
        # Quota available to this subtree (own nominal plus what children lend).
        self.subtree_quota: dict[FlavorResource, int] = {}
        # Cached localQuota (only non-zero entries), refreshed with subtree_quota.
        self.local_quota: dict[FlavorResource, int] = {}
        # Usage counting against subtree_quota; may exceed it when over-admitted.
        self.usage: dict[FlavorResource, int] = {}
        self.fair_weight: float = 1.0

    def __repr__(self) -> str:
        kind = "Cohort" if self.is_cohort else "ClusterQueue"
        return f"<{kind} {self.name}>"

    def quota(self, fr: FlavorResource) -> Quota:
        return self.quotas.get(fr, _NO_QUOTA)

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> Iterator[QuotaNode]:
        """Parent, grandparent, ... up to the root."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def subtree_cluster_queues(self, _seen: set[int] | None = None) -> list[QuotaNode]:
        """The ClusterQueues below this node. A cohort met twice (a cycle of cohorts, which
        the engine keeps from admitting) is walked once, so the walk ends."""
        if not self.is_cohort:
            return [self]
        seen = set() if _seen is None else _seen
        if id(self) in seen:
            return []
        seen.add(id(self))
        out = list(self.child_cqs)
        for child in self.child_cohorts:
            out.extend(child.subtree_cluster_queues(seen))
        return out

    def borrowing_with(self, fr: FlavorResource, val: int) -> bool:
        """Whether usage + val exceeds the node's own quota (nominal for a CQ)."""
        return self.usage.get(fr, 0) + val > self.subtree_quota.get(fr, 0)

    def borrowing(self, fr: FlavorResource) -> bool:
        return self.usage.get(fr, 0) > self.subtree_quota.get(fr, 0)


# ----------------------------------------------------------------------------- pure math


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    """Guaranteed quota of this node not yet used; invisible to the parent."""
    local = node.local_quota.get(fr, 0)
    if local == 0:
        return 0
    return max(0, local - node.usage.get(fr, 0))


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """Capacity still usable by `node` for fr, given usage and borrowing limits.

    Negative when the node is over-admitted (quota was lowered or the node moved to
    another cohort after workloads were admitted).
    """
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        local = node.local_quota.get(fr, 0)
        usage = node.usage.get(fr, 0)
        stored_in_parent = node.subtree_quota.get(fr, 0) - local
        used_in_parent = max(0, usage - local)
        parent_available = min(
            stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available
        )
    return local_available(node, fr) + parent_available


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most `node` could ever use of fr with nothing else admitted."""
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0)
    result = node.local_quota.get(fr, 0) + potential_available(parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        result = min(node.subtree_quota.get(fr, 0) + quota.borrowing_limit, result)
    return result


def add_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Charge val to node; what does not fit its local quota bubbles to the parent.

    A cohort cycle (bad input: such queues are inactive) ends the walk where it loops.
    """
    seen = [node]
    while True:
        spill = val - local_available(node, fr)
        node.usage[fr] = node.usage.get(fr, 0) + val
        parent = node.parent
        if parent is None or spill <= 0 or parent in seen:
            return
        seen.append(parent)
        node, val = parent, spill


def remove_usage(node: QuotaNode, fr: FlavorResource, val: int) -> None:
    """Release val from node and the part of it that was stored in ancestors."""
    seen = [node]
    while True:
        usage = node.usage.get(fr, 0)
        stored_in_parent = usage - node.local_quota.get(fr, 0)
        node.usage[fr] = usage - val
        parent = node.parent
        if parent is None or stored_in_parent <= 0 or parent in seen:
            return
        seen.append(parent)
        node, val = parent, min(val, stored_in_parent)


def add_usages(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, val in usage.items():
        add_usage(node, fr, val)


def remove_usages(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, val in usage.items():
        remove_usage(node, fr, val)


def fits(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> bool:
    """Whether a whole request fits what the node may still use."""
    return all(max(0, available(node, fr)) >= val for fr, val in usage.items())


def quantities_fit_in_quota(
    node: QuotaNode, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """Whether requests fit in this node's own subtree quota, and what must come from above."""
    ok = True
    remaining: dict[FlavorResource, int] = {}
    usage = node.usage
    subtree = node.subtree_quota
    for fr, val in requests.items():
        if usage.get(fr, 0) + val > subtree.get(fr, 0):
            ok = False
        remaining[fr] = max(0, val - local_available(node, fr))
    return ok, remaining


def within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    """True if usage is within the node's own subtree quota for every fr given."""
    usage = node.usage
    subtree = node.subtree_quota
    return all(usage.get(fr, 0) <= subtree.get(fr, 0) for fr in frs)


def node_height(node: QuotaNode) -> int:
    """Height of a cohort: 1 when only CQs hang below it, +1 per level of child cohorts."""
    height = min(len(node.child_cqs) + len(node.child_cohorts), 1)
    for child in node.child_cohorts:
        height = max(height, node_height(child) + 1)
    return height


def lowest_fitting_subtree_height(cq: QuotaNode, fr: FlavorResource, val: int) -> tuple[int, bool]:
    """Borrowing level of a request of val, and whether reclaiming higher up could help.

    Level 0 means within the CQ's own quota (or no cohort). Otherwise the height of the
    first ancestor whose subtree quota would still cover the request.
    """
    if cq.parent is None:
        return 0, False
    if not cq.borrowing_with(fr, val):
        return 0, True
    remaining = val - local_available(cq, fr)
    for node in cq.ancestors():
        if not node.borrowing_with(fr, remaining):
            return node_height(node), node.parent is not None
        remaining -= local_available(node, fr)
    return node_height(cq.root()), False


# ----------------------------------------------------------------------------- the tree


def _local_quota_of(node: QuotaNode) -> dict[FlavorResource, int]:
    out: dict[FlavorResource, int] = {}
    for fr, quota in node.quotas.items():
        if quota.lending_limit is not None:
            local = max(0, node.subtree_quota.get(fr, 0) - quota.lending_limit)
            if local:
                out[fr] = local
    return out


def refresh_subtree(node: QuotaNode) -> None:
    """Recompute subtree quota, local quota and (for cohorts) usage below `node`.

    ClusterQueue usage is the source of truth; cohort usage is derived from it.
    """
    if not node.is_cohort:
        node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
        node.local_quota = _local_quota_of(node)
        return
    subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    usage: dict[FlavorResource, int] = {}
    for child in (*node.child_cohorts, *node.child_cqs):
        refresh_subtree(child)
        child_local = child.local_quota
        for fr, value in child.subtree_quota.items():
            subtree[fr] = subtree.get(fr, 0) + value - child_local.get(fr, 0)
        for fr, value in child.usage.items():
            spill = value - child_local.get(fr, 0)
            if spill > 0:
                usage[fr] = usage.get(fr, 0) + spill
            else:
                usage.setdefault(fr, 0)
    node.subtree_quota = subtree
    node.usage = usage
    node.local_quota = _local_quota_of(node)


@dataclass(slots=True)
class CohortSpec:
    parent: str | None
    quotas: dict[FlavorResource, Quota]
    fair_weight: float


class QuotaTree:
    """Owns all nodes; keeps parent links, implicit cohorts and derived figures in sync."""

    __slots__ = ("cohort_specs", "cohorts", "cqs", "cycle_roots")

    def __init__(self) -> None:
        self.cqs: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        # Cohorts that exist as objects; others exist only because something names them.
        self.cohort_specs: dict[str, CohortSpec] = {}
        # Cohort names that are part of, or hang below, a parent cycle.
        self.cycle_roots: set[str] = set()

    # -------------------------------------------------------------- structure
    def _cohort(self, name: str) -> QuotaNode:
        node = self.cohorts.get(name)
        if node is None:
            node = QuotaNode(name, is_cohort=True)
            self.cohorts[name] = node
        return node

    @staticmethod
    def _detach(node: QuotaNode) -> QuotaNode | None:
        parent = node.parent
        if parent is not None:
            siblings = parent.child_cohorts if node.is_cohort else parent.child_cqs
            siblings.remove(node)
            node.parent = None
        return parent

    @staticmethod
    def _attach(node: QuotaNode, parent: QuotaNode) -> None:
        siblings = parent.child_cohorts if node.is_cohort else parent.child_cqs
        siblings.append(node)
        siblings.sort(key=lambda n: n.name)
        node.parent = parent

    def _collect_garbage(self, cohort: QuotaNode | None) -> None:
        """Drop implicit cohorts that nothing refers to any more."""
        while cohort is not None:
            if cohort.name in self.cohort_specs or cohort.child_cohorts or cohort.child_cqs:
                return
            parent = self._detach(cohort)
            del self.cohorts[cohort.name]
            cohort = parent

    def set_cluster_queue(
        self,
        name: str,
        quotas: dict[FlavorResource, Quota],
        cohort: str | None,
        fair_weight: float,
    ) -> QuotaNode:
        node = self.cqs.get(name)
        if node is None:
            node = QuotaNode(name, is_cohort=False)
            self.cqs[name] = node
        old_parent = self._detach(node)
        node.quotas = quotas
        node.fair_weight = fair_weight
        if cohort:
            self._attach(node, self._cohort(cohort))
        self._collect_garbage(old_parent)
        self._refresh_around(node, old_parent)
        return node

    def remove_cluster_queue(self, name: str) -> None:
        node = self.cqs.pop(name, None)
        if node is None:
            return
        old_parent = self._detach(node)
        self._collect_garbage(old_parent)
        self._refresh_around(None, old_parent)

    def set_cohort(
        self,
        name: str,
        parent: str | None,
        quotas: dict[FlavorResource, Quota],
        fair_weight: float,
    ) -> QuotaNode:
        self.cohort_specs[name] = CohortSpec(parent, quotas, fair_weight)
        node = self._cohort(name)
        old_parent = self._detach(node)
        node.quotas = quotas
        node.fair_weight = fair_weight
        if parent:
            self._attach(node, self._cohort(parent))
        self._collect_garbage(old_parent)
        self._refresh_around(node, old_parent)
        return node

    def remove_cohort(self, name: str) -> None:
        """The Cohort object is gone; it lives on implicitly while children name it."""
        if self.cohort_specs.pop(name, None) is None:
            return
        node = self.cohorts.get(name)
        if node is None:
            return
        old_parent = self._detach(node)
        node.quotas = {}
        node.fair_weight = 1.0
        self._collect_garbage(old_parent)
        self._collect_garbage(node if node.name in self.cohorts else None)
        self._refresh_around(node if node.name in self.cohorts else None, old_parent)

    # -------------------------------------------------------------- cycles
    def _find_cycle(self, start: QuotaNode) -> list[str] | None:
        seen: list[str] = []
        node: QuotaNode | None = start
        while node is not None:
            if node.name in seen:
                return [*seen[seen.index(node.name) :], node.name]
            seen.append(node.name)
            node = node.parent
        return None

    def in_cycle(self, node: QuotaNode) -> bool:
        """True if the node's ancestry loops (such a tree is not schedulable)."""
        return self._find_cycle(node if node.is_cohort else node.parent or node) is not None

    def cycle_of(self, cohort: str) -> list[str] | None:
        node = self.cohorts.get(cohort)
        return None if node is None else self._find_cycle(node)

    # -------------------------------------------------------------- refresh
    def _refresh_around(self, node: QuotaNode | None, old_parent: QuotaNode | None) -> None:
        for start in (node, old_parent):
            if start is None:
                continue
            if self._find_cycle(start if start.is_cohort else (start.parent or start)):
                self._recompute_cycle_roots()
                continue
            refresh_subtree(start.root())
        self._recompute_cycle_roots()

    def _recompute_cycle_roots(self) -> None:
        self.cycle_roots = {
            name for name, node in self.cohorts.items() if self._find_cycle(node) is not None
        }
