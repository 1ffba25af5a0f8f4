"""Among workers that fit, which one: spread the load, pack it, or keep config order.

- `Spread` (the default): the worker that keeps the largest share of its ClusterQueue's
  quota free after taking the workload, so a stream of jobs is shared by the fleet in
  proportion to each worker's room, and every worker's control plane carries its part.
- `Pack`: the worker left with the smallest share free (the tightest fit), so big free
  blocks stay whole elsewhere for big jobs.
- `ConfigOrder`: the first in the MultiKueueConfig's order (the rule before policies existed).

The share is the smallest, over the quota the workload's flavor plan takes, of
(nominal - reserved - in flight - this workload) / nominal on that worker: the resource
that would run out first decides. Ties go to the worker with fewer of the hub's own
claims in flight, then to the report's fewer pending workloads, then to config order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.engine.dispatch.capacity_snapshot import QueueSnapshot


class PlacementPolicy(StrEnum):
    SPREAD = "Spread"
    PACK = "Pack"
    CONFIG_ORDER = "ConfigOrder"


@dataclass(frozen=True, slots=True, kw_only=True)
class FittingWorker:
    """What the policy weighs for one worker that fits (`position`: its config order)."""

    worker: str
    position: int
    free_share_after: float
    claims_in_flight: int = 0
    pending_workloads: int = 0


def free_share_after(queue: QueueSnapshot, usage: Mapping[str, Mapping[str, int]]) -> float:
    """The smallest free share of the quota `usage` draws on once it is taken (1.0 when it
    draws on no quota). `queue.usage` must already hold what is in flight."""
    nominal = dict(queue.quota)
    share = 1.0
    for flavor, amounts in usage.items():
        for resource, amount in amounts.items():
            quota = nominal.get(flavor, {}).get(resource, 0)
            if quota <= 0:
                continue
            left = quota - queue.reserved(flavor, resource) - amount
            share = min(share, left / quota)
    return share


def rank(policy: PlacementPolicy, fitting: Sequence[FittingWorker]) -> tuple[str, ...]:
    """The fitting workers, best first, under `policy`."""

    def key(w: FittingWorker) -> tuple[float, int, int, int]:
        if policy is PlacementPolicy.CONFIG_ORDER:
            return (0.0, 0, 0, w.position)
        share = -w.free_share_after if policy is PlacementPolicy.SPREAD else w.free_share_after
        return (round(share, 9), w.claims_in_flight, w.pending_workloads, w.position)

    return tuple(w.worker for w in sorted(fitting, key=key))
