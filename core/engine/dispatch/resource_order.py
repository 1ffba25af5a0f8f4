"""One notion of "bigger" for nodes and pods, shared by the agent's report and the hub.

The agent reports only the few nodes with the most room, and the hub packs the largest
pods first; both must agree on what "most" means or the hub would pack against the wrong
nodes. Resources are compared lexicographically, scarcest first:

1. extended resources (domain-prefixed names such as `nvidia.com/gpu`), by name;
2. `cpu`, then `memory`, then `ephemeral-storage`;
3. any other resource (`hugepages-2Mi`, ...), by name;
4. `pods` last: nearly every node has room for more pods.

So a node with 8 free GPUs outranks one with 4 whatever their cpu, and among CPU-only
nodes the one with more free cpu comes first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

_FIXED_RANKS = {"cpu": 1, "memory": 2, "ephemeral-storage": 3, "pods": 5}
_EXTENDED_RANK = 0
_OTHER_RANK = 4


def _rank(resource: str) -> tuple[int, str]:
    if resource in _FIXED_RANKS:
        return (_FIXED_RANKS[resource], resource)
    if "/" in resource:
        return (_EXTENDED_RANK, resource)
    return (_OTHER_RANK, resource)


def resource_priority(resources: Iterable[str]) -> tuple[str, ...]:
    """The given resource names, scarcest first (the order `size_key` compares in)."""
    return tuple(sorted(set(resources), key=_rank))


def size_key(amounts: Mapping[str, int], priority: Sequence[str]) -> tuple[int, ...]:
    """Comparable size of a node's free room or a pod's requests; bigger sorts later.

    `priority` must hold every resource either side of a comparison names, so that both
    tuples line up (build it once with `resource_priority` over the union).
    """
    return tuple(amounts.get(resource, 0) for resource in priority)
