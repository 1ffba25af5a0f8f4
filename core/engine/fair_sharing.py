"""Dominant Resource Share (DRS): how much of what it could borrow a node is borrowing.

For a node below a cohort, for every resource it uses beyond its own subtree quota:
`borrowed x 1000 / lendable`, where lendable is what the parent could hand out of that
resource (summed over flavors). The node's share is the largest such ratio, divided by
its fair-sharing weight. A weight of 0 while borrowing makes the share infinite. Roots
and nodes within their quota have share 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from core.engine.quota_tree import FlavorResource, QuotaNode, potential_available

MAX_WEIGHTED_SHARE = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class DRS:
    weight: float
    ratio: float
    dominant: str
    borrowing: bool
    borrowed_frs: tuple[FlavorResource, ...]

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)

    def rounded(self) -> int:
        """The `weightedShare` figure reported in status."""
        if self.zero_weight_borrows:
            return MAX_WEIGHTED_SHARE
        return math.ceil(self.precise())


NEGATIVE_DRS = DRS(weight=1.0, ratio=-1.0, dominant="", borrowing=False, borrowed_frs=())


def compare_drs(a: DRS, b: DRS) -> int:
    a_inf, b_inf = a.zero_weight_borrows, b.zero_weight_borrows
    if a_inf and b_inf:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a_inf:
        return 1
    if b_inf:
        return -1
    pa, pb = a.precise(), b.precise()
    return (pa > pb) - (pa < pb)


def lendable(parent: QuotaNode) -> dict[str, int]:
    """Per resource, what `parent` could hand to its children, over all flavors."""
    root = parent.root()
    out: dict[str, int] = {}
    for fr in root.subtree_quota:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def dominant_resource_share(
    node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None
) -> DRS:
    """DRS of node, optionally as if `extra` usage were added to it."""
    weight = node.fair_weight
    parent = node.parent
    if parent is None:
        return DRS(weight, 0.0, "", False, ())
    borrowed: dict[str, int] = {}
    borrowed_frs: list[FlavorResource] = []
    usage = node.usage
    for fr, quota in node.subtree_quota.items():
        amount = usage.get(fr, 0) - quota
        if extra:
            amount += extra.get(fr, 0)
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            borrowed_frs.append(fr)
    if not borrowed:
        return DRS(weight, 0.0, "", False, ())
    lend = lendable(parent)
    ratio = 0.0
    dominant = ""
    for res in sorted(borrowed):
        lr = lend.get(res, 0)
        if lr > 0:
            r = borrowed[res] * 1000.0 / lr
            if r > ratio:
                ratio, dominant = r, res
    return DRS(weight, ratio, dominant, True, tuple(borrowed_frs))
