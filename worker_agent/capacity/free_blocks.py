"""Free room per node, and the few nodes with the most of it.

The report lists at most MAX_FREE_BLOCKS nodes' free room ("blocks"); the hub packs pods
onto them, largest first. The ranking is `core.engine.dispatch.resource_order` (scarcest
resource first: GPUs and other extended resources, then cpu, memory, ...), the same one
the hub packs by; ties go to the node whose name sorts first, so output is stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.api.worker_capacity import MAX_FREE_BLOCKS
from core.engine.dispatch.resource_order import resource_priority, size_key


def node_free(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> dict[str, int]:
    """Allocatable minus requested, per allocatable resource; zero when overcommitted."""
    return {r: max(0, amount - requested.get(r, 0)) for r, amount in allocatable.items()}


def largest_free_blocks(
    free_by_node: Sequence[tuple[str, Mapping[str, int]]], limit: int = MAX_FREE_BLOCKS
) -> list[Mapping[str, int]]:
    """The free room of the `limit` nodes with the most of it, largest first."""
    priority = resource_priority(r for _, free in free_by_node for r in free)
    ranked = sorted(free_by_node, key=lambda item: item[0])
    ranked.sort(key=lambda item: size_key(item[1], priority), reverse=True)
    return [free for _, free in ranked[:limit]]
