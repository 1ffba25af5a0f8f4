"""Can every pod be given a node with that much free of every resource?

Free capacity summed over a flavor says nothing about a pod that needs 8 GPUs on one node,
so the report lists the free room of the nodes with the most of it ("blocks", largest
first) and this module packs pods onto them first-fit-decreasing: largest pod first, each
onto the first block that still has room, consuming it. Identical pods of a pod set are
placed together, which gives the same result as one at a time and costs one step per
block instead of one per pod.

Past the reported blocks the report has only the flavor's total free room. When the flavor
has nodes the report leaves out, leftover pods are packed against that remainder summed,
taking a pod as placeable only if it also fits the smallest reported block: the unreported
nodes rank below it (see `resource_order`), so this is exact for the scarcest resource and
an estimate for the others. A node's free `pods` count limits how many pods it takes.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace

from core.engine.dispatch.capacity_snapshot import FlavorSnapshot, ResourceAmounts
from core.engine.dispatch.resource_order import resource_priority, size_key

PODS = "pods"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodGroup:
    """`count` identical pods of one pod set, each requesting `requests`."""

    pod_set: str
    requests: ResourceAmounts
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PackingShortfall:
    """The first pod set that could not be placed completely."""

    pod_set: str
    requests: ResourceAmounts
    placed: int
    count: int


def copies_that_fit(free: Mapping[str, int], requests: Mapping[str, int], limit: int) -> int:
    """How many pods with `requests` fit in `free`, at most `limit`.

    A resource missing from `free` counts as none free, except `pods`, which limits only
    where the node reports it.
    """
    copies = limit
    for resource, amount in requests.items():
        if amount > 0:
            copies = min(copies, free.get(resource, 0) // amount)
            if copies <= 0:
                return 0
    if PODS in free:
        copies = min(copies, free[PODS])
    return max(0, copies)


def _consume(free: MutableMapping[str, int], requests: Mapping[str, int], copies: int) -> None:
    for resource, amount in requests.items():
        if amount > 0:
            free[resource] -= amount * copies
    if PODS in free:
        free[PODS] -= copies


def _fits_unreported(group: PodGroup, smallest: ResourceAmounts | None) -> bool:
    """Whether one pod could fit a node ranked below the smallest reported block."""
    return smallest is None or copies_that_fit(smallest, group.requests, 1) == 1


def _place(
    groups: Sequence[PodGroup], flavor: FlavorSnapshot, *, stop_short: bool
) -> tuple[PackingShortfall | None, list[dict[str, int]], dict[str, int] | None]:
    """First-fit-decreasing over the blocks, then the unreported remainder: the first
    shortfall and the room left. `stop_short`: give up at the first pod set that does not
    fit whole; else place what fits of every pod set."""
    pods = [
        PodGroup(
            pod_set=g.pod_set,
            requests={r: v for r, v in g.requests.items() if r != PODS and v > 0},
            count=g.count,
        )
        for g in groups
        if g.count > 0
    ]
    names = {r for g in pods for r in g.requests}
    priority = resource_priority(names)
    # Stable sort: equal pods keep the workload's pod set order.
    pods.sort(key=lambda g: size_key(g.requests, priority), reverse=True)

    blocks = [dict(block) for block in flavor.blocks]
    remainder = flavor.unreported_free() if flavor.has_unreported_nodes else None
    smallest = flavor.blocks[-1] if flavor.blocks else None
    shortfall = None
    for group in pods:
        left = group.count
        for block in blocks:
            if left == 0:
                break
            copies = copies_that_fit(block, group.requests, left)
            _consume(block, group.requests, copies)
            left -= copies
        if left and remainder is not None and _fits_unreported(group, smallest):
            copies = copies_that_fit(remainder, group.requests, left)
            _consume(remainder, group.requests, copies)
            left -= copies
        if left and shortfall is None:
            shortfall = PackingShortfall(
                pod_set=group.pod_set,
                requests=group.requests,
                placed=group.count - left,
                count=group.count,
            )
            if stop_short:
                break
    return shortfall, blocks, remainder


def pack(groups: Sequence[PodGroup], flavor: FlavorSnapshot) -> PackingShortfall | None:
    """Place every pod on the flavor's nodes; the first shortfall, or None if all fit."""
    return _place(groups, flavor, stop_short=True)[0]


def _summed(blocks: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for block in blocks:
        for resource, amount in block.items():
            out[resource] = out.get(resource, 0) + amount
    return out


def room_after(groups: Sequence[PodGroup], flavor: FlavorSnapshot) -> FlavorSnapshot:
    """The flavor as it would be reported once these pods are placed (pods that find no
    room are left out): blocks reduced and ranked again, free reduced by what was placed."""
    _, blocks, remainder = _place(groups, flavor, stop_short=False)
    taken = _summed(flavor.blocks)
    for resource, amount in _summed(blocks).items():
        taken[resource] -= amount
    if remainder is not None:
        for resource, amount in flavor.unreported_free().items():
            taken[resource] = taken.get(resource, 0) + amount - remainder.get(resource, 0)
    free = {r: max(0, amount - taken.get(r, 0)) for r, amount in flavor.free.items()}
    priority = resource_priority({r for b in blocks for r in b if r != PODS})
    blocks.sort(key=lambda b: size_key(b, priority), reverse=True)
    return replace(flavor, free=free, blocks=tuple(blocks))
