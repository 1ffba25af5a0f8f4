"""Free capacity per topology domain of a TAS flavor, for the hub to send a rack- or
block-constrained job only to a worker with a whole domain free.

For each level of the flavor's Topology above the hostname, the flavor's nodes (those
carrying every level label, as TAS counts them) are grouped by their label values down to
that level; each domain reports its node count, free room summed, and the free room of
its MAX_DOMAIN_FREE_BLOCKS nodes with the most of it. Only the MAX_DOMAINS_PER_LEVEL
domains with the most free room are listed per level (ranked as free blocks are, ties by
values), with the level's total domain count, so the report stays bounded on any
cluster. The hostname level needs nothing more: the flavor's free blocks are its nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.api.topology import HOSTNAME_LABEL
from core.api.worker_capacity import (
    MAX_DOMAIN_FREE_BLOCKS,
    MAX_DOMAINS_PER_LEVEL,
    MAX_TOPOLOGY_LEVELS,
    FlavorTopologyCapacity,
    TopologyDomainCapacity,
    TopologyLevelCapacity,
)
from core.engine.dispatch.resource_order import resource_priority, size_key
from worker_agent.capacity.free_blocks import largest_free_blocks
from worker_agent.capacity.node_pool import NodeView
from worker_agent.capacity.queue_figures import resource_list


def _level(
    depth: int,
    located: Sequence[tuple[str, tuple[str, ...]]],
    free_by_node: Mapping[str, Mapping[str, int]],
) -> tuple[int, list[TopologyDomainCapacity]]:
    """(domain count, the largest domains) of one level; `located` is (node, values)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, values in located:
        groups.setdefault(values[: depth + 1], []).append(name)
    domains = []
    for values, names in groups.items():
        free: dict[str, int] = {}
        for name in names:
            for resource, amount in free_by_node.get(name, {}).items():
                free[resource] = free.get(resource, 0) + amount
        blocks = largest_free_blocks(
            [(name, free_by_node.get(name, {})) for name in names], MAX_DOMAIN_FREE_BLOCKS
        )
        domains.append((values, len(names), free, blocks))
    priority = resource_priority(r for _, _, free, _ in domains for r in free)
    domains.sort(key=lambda d: d[0])
    domains.sort(key=lambda d: size_key(d[2], priority), reverse=True)
    return len(domains), [
        TopologyDomainCapacity(
            values=list(values),
            node_count=count,
            free=resource_list(free),
            largest_free_blocks=[resource_list(dict(b)) for b in blocks],
        )
        for values, count, free, blocks in domains[:MAX_DOMAINS_PER_LEVEL]
    ]


def topology_capacity(
    topology_name: str,
    levels: Sequence[str],
    members: Sequence[NodeView],
    free_by_node: Mapping[str, Mapping[str, int]],
) -> FlavorTopologyCapacity:
    """The flavor's per-domain report (see module docstring); `members` are its nodes."""
    wide = [level for level in levels if level != HOSTNAME_LABEL][:MAX_TOPOLOGY_LEVELS]
    located = [
        (n.name, tuple(n.labels[level] for level in wide))
        for n in members
        if all(level in n.labels for level in levels)
    ]
    out = []
    for depth, label in enumerate(wide):
        count, domains = _level(depth, located, free_by_node)
        out.append(TopologyLevelCapacity(node_label=label, domain_count=count, domains=domains))
    return FlavorTopologyCapacity(topology_name=topology_name, levels=out)
