"""The engine's topology inputs and TAS accounting: nodes, Topologies, pods not under TAS.

The driver feeds Topology objects, Nodes and the pods that TAS did not place (DaemonSets,
static pods, anything bound without a topology assignment); the engine keeps, per TAS
flavor, what admitted TAS workloads hold in each leaf domain. A flavor's view (its tree
and each leaf's free capacity) is rebuilt lazily after nodes or Topologies change, and
its free capacity after non-TAS pods change; TAS usage is kept apart, keyed by leaf, so
a rebuild never loses it.

Only Ready, schedulable nodes that carry the flavor's node labels and every level label
belong to a flavor, as upstream's node cache decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.api.topology import HOSTNAME_LABEL
from core.engine.model import Node, ResourceFlavor, Topology, TopologyAssignment
from core.engine.topology_placement import (
    DomainUsage,
    TopologyPlacer,
    add_domain_usage,
    usage_of,
)
from core.engine.topology_tree import TopologyTree, domain_id, node_matches_flavor


@dataclass(frozen=True, slots=True)
class TasUsage:
    """One domain's share of a workload: flavor, leaf key and the usage there."""

    flavor: str
    leaf_key: str
    usage: Mapping[str, int]


def assignment_leaf_key(assignment: TopologyAssignment, values: tuple[str, ...]) -> str:
    """The leaf a domain of an assignment names: the hostname, or the full domain id."""
    if assignment.levels and assignment.levels[-1] == HOSTNAME_LABEL:
        return values[-1]
    return domain_id(values)


def tas_usage_of(
    flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
) -> list[TasUsage]:
    return [
        TasUsage(flavor, assignment_leaf_key(assignment, d.values), usage_of(per_pod, d.count))
        for d in assignment.domains
    ]


class _FlavorView:
    __slots__ = ("free", "placer", "tree")

    def __init__(self, placer: TopologyPlacer, tree: TopologyTree) -> None:
        self.placer = placer
        self.tree = tree
        self.free: dict[str, dict[str, int]] | None = None


class TopologyState:
    """Topologies, nodes, non-TAS pod usage and per-flavor TAS usage."""

    __slots__ = ("_views", "node_usage", "nodes", "pod_usage", "topologies", "usage")

    def __init__(self) -> None:
        self.topologies: dict[str, Topology] = {}
        self.nodes: dict[str, Node] = {}
        # Non-TAS pod key -> (node name, requests); node name -> summed usage (pods counted).
        self.pod_usage: dict[str, tuple[str, dict[str, int]]] = {}
        self.node_usage: dict[str, dict[str, int]] = {}
        # flavor -> leaf key -> resource -> usage held by admitted TAS workloads.
        self.usage: dict[str, DomainUsage] = {}
        self._views: dict[str, _FlavorView] = {}

    # ------------------------------------------------------------ inputs
    def upsert_topology(self, topology: Topology) -> None:
        self.topologies[topology.name] = topology
        self._views.clear()

    def delete_topology(self, name: str) -> None:
        self.topologies.pop(name, None)
        self._views.clear()

    def upsert_node(self, node: Node) -> None:
        old = self.nodes.get(node.name)
        self.nodes[node.name] = node
        if old != node:
            self._views.clear()

    def delete_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is not None:
            self._views.clear()

    def flavor_changed(self, name: str) -> None:
        self._views.pop(name, None)

    def upsert_pod(self, key: str, node_name: str, requests: Mapping[str, int]) -> None:
        """A running pod that TAS did not place, bound to node_name, with its requests."""
        self.delete_pod(key)
        usage = {res: val for res, val in requests.items() if res != "pods"}
        self.pod_usage[key] = (node_name, usage)
        into = self.node_usage.setdefault(node_name, {})
        for res, val in usage.items():
            into[res] = into.get(res, 0) + val
        into["pods"] = into.get("pods", 0) + 1
        self._free_changed()

    def delete_pod(self, key: str) -> None:
        found = self.pod_usage.pop(key, None)
        if found is None:
            return
        node_name, usage = found
        into = self.node_usage.get(node_name)
        if into is not None:
            for res, val in usage.items():
                into[res] = into.get(res, 0) - val
            into["pods"] = into.get("pods", 0) - 1
            if into["pods"] <= 0:
                del self.node_usage[node_name]
        self._free_changed()

    def _free_changed(self) -> None:
        for view in self._views.values():
            view.free = None

    # ------------------------------------------------------------ TAS usage
    def add_usage(self, usages: Iterable[TasUsage]) -> None:
        for u in usages:
            add_domain_usage(self.usage.setdefault(u.flavor, {}), u.leaf_key, u.usage)
            self._forget(u)

    def remove_usage(self, usages: Iterable[TasUsage]) -> None:
        for u in usages:
            into = self.usage.setdefault(u.flavor, {}).setdefault(u.leaf_key, {})
            for res, val in u.usage.items():
                into[res] = into.get(res, 0) - val
            self._forget(u)

    def _forget(self, u: TasUsage) -> None:
        view = self._views.get(u.flavor)
        if view is not None:
            view.placer.forget(u.leaf_key)

    # ------------------------------------------------------------ views
    def placer(self, flavor: ResourceFlavor) -> TopologyPlacer | None:
        """The flavor's placement view; None unless it names an existing Topology."""
        if flavor.topology_name is None:
            return None
        topology = self.topologies.get(flavor.topology_name)
        if topology is None or not topology.levels:
            return None
        view = self._views.get(flavor.name)
        if view is None:
            nodes = [
                n
                for n in self.nodes.values()
                if n.ready
                and not n.unschedulable
                and node_matches_flavor(n.labels, flavor.node_labels, topology.levels)
            ]
            tree = TopologyTree(topology.levels, sorted(nodes, key=lambda n: n.name))
            placer = TopologyPlacer(
                topology.name,
                tree,
                {},
                self.usage.setdefault(flavor.name, {}),
                flavor.tolerations,
            )
            view = _FlavorView(placer, tree)
            self._views[flavor.name] = view
        if view.free is None:
            view.free = self._free_of(view.tree)
            view.placer.free = view.free
            view.placer.forget()
        return view.placer

    def _free_of(self, tree: TopologyTree) -> dict[str, dict[str, int]]:
        free = {key: dict(leaf.capacity) for key, leaf in tree.leaves.items()}
        for node_name, usage in self.node_usage.items():
            key = tree.node_leaf.get(node_name)
            if key is None:
                continue
            into = free[key]
            for res, val in usage.items():
                into[res] = into.get(res, 0) - val
        return free
