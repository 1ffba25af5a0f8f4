"""The topology tree of one TAS ResourceFlavor: domains per level, built from node labels.

A domain is identified by its label values from the top level down to its own; the
leaves are the domains of the lowest level and carry the summed allocatable of their
nodes. When the lowest level is `kubernetes.io/hostname` each leaf is one node and its id
is the node name alone (that is how assignments name it), otherwise an id is the values
joined by commas, as upstream's domain ids.

Domains also carry the scratch counters the placement algorithm fills per request
(`topology_placement`); the engine is single-threaded, so one set of counters per tree
is enough and each run starts by clearing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.api.topology import HOSTNAME_LABEL
from core.engine.model import Node

DOMAIN_ID_SEPARATOR = ","


def domain_id(values: Iterable[str]) -> str:
    """Upstream's domain id: the level values joined by commas."""
    return DOMAIN_ID_SEPARATOR.join(values)


def belongs_to(leaf_id: str, target: str) -> bool:
    """Whether a domain id names target itself or one of its descendants ("" = any)."""
    return not target or leaf_id == target or leaf_id.startswith(target + DOMAIN_ID_SEPARATOR)


class Domain:
    """One topology domain; counters are scratch state of the current placement run."""

    __slots__ = (
        "children",
        "id",
        "leader_count",
        "level",
        "parent",
        "pod_count",
        "pod_count_with_leader",
        "slice_count",
        "slice_count_with_leader",
        "values",
    )

    def __init__(self, values: tuple[str, ...], parent: Domain | None) -> None:
        self.values = values
        self.id = domain_id(values)
        self.level = len(values) - 1
        self.parent = parent
        self.children: list[Domain] = []
        self.reset()

    def reset(self) -> None:
        self.pod_count = 0
        self.slice_count = 0
        self.pod_count_with_leader = 0
        self.slice_count_with_leader = 0
        self.leader_count = 0

    def copy_counts(self) -> Domain:
        """A detached copy with the same identity and counters (for a leader's share)."""
        clone = Domain.__new__(Domain)
        clone.values = self.values
        clone.id = self.id
        clone.level = self.level
        clone.parent = self.parent
        clone.children = self.children
        clone.pod_count = self.pod_count
        clone.slice_count = self.slice_count
        clone.pod_count_with_leader = self.pod_count_with_leader
        clone.slice_count_with_leader = self.slice_count_with_leader
        clone.leader_count = self.leader_count
        return clone


class Leaf:
    """A lowest-level domain: its nodes' allocatable and, for hostname leaves, the node."""

    __slots__ = ("capacity", "domain", "key", "node")

    def __init__(self, key: str, domain: Domain, node: Node | None) -> None:
        self.key = key
        self.domain = domain
        self.node = node
        self.capacity: dict[str, int] = {}


def node_matches_flavor(
    labels: Mapping[str, str], flavor_labels: Mapping[str, str], levels: Iterable[str]
) -> bool:
    """A node belongs to a TAS flavor when it has the flavor's labels and every level label."""
    if any(labels.get(k) != v for k, v in flavor_labels.items()):
        return False
    return all(level in labels for level in levels)


class TopologyTree:
    """The static structure: levels, domains per level, leaves with their capacity."""

    __slots__ = (
        "by_level",
        "hostname_lowest",
        "leaves",
        "levels",
        "node_leaf",
        "roots",
        "tainted",
    )

    def __init__(self, levels: tuple[str, ...], nodes: Iterable[Node]) -> None:
        self.levels = levels
        self.hostname_lowest = bool(levels) and levels[-1] == HOSTNAME_LABEL
        self.by_level: list[dict[tuple[str, ...], Domain]] = [{} for _ in levels]
        self.roots: list[Domain] = []
        # Leaf key (hostname, or the full domain id) -> leaf, in insertion order.
        self.leaves: dict[str, Leaf] = {}
        self.node_leaf: dict[str, str] = {}
        # Whether any node has a taint (else node filtering can be skipped).
        self.tainted = False
        for node in nodes:
            self._add(node)
        for level in self.by_level:
            for dom in level.values():
                dom.children.sort(key=lambda d: d.values)
        self.roots.sort(key=lambda d: d.values)

    def _domain(self, values: tuple[str, ...]) -> Domain:
        level = self.by_level[len(values) - 1]
        found = level.get(values)
        if found is not None:
            return found
        parent = self._domain(values[:-1]) if len(values) > 1 else None
        dom = Domain(values, parent)
        level[values] = dom
        if parent is None:
            self.roots.append(dom)
        else:
            parent.children.append(dom)
        return dom

    def _add(self, node: Node) -> None:
        values = tuple(node.labels[level] for level in self.levels)
        key = values[-1] if self.hostname_lowest else domain_id(values)
        leaf = self.leaves.get(key)
        if leaf is None:
            leaf = Leaf(key, self._domain(values), node if self.hostname_lowest else None)
            self.leaves[key] = leaf
        for res, val in node.allocatable.items():
            leaf.capacity[res] = leaf.capacity.get(res, 0) + val
        self.node_leaf[node.name] = key
        self.tainted = self.tainted or bool(node.taints)

    def level_index(self, label: str) -> int | None:
        try:
            return self.levels.index(label)
        except ValueError:
            return None

    def leaf_key(self, values: tuple[str, ...]) -> str:
        """The leaf key of an assignment's domain values (hostname-only or full values)."""
        return values[-1] if self.hostname_lowest else domain_id(values)
