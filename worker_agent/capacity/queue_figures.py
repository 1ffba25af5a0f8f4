"""A worker ClusterQueue's quota, reserved quota and backlog, as the report carries them.

Quota is listed in the ClusterQueue's own order (resource groups, then flavors by
preference), because the hub mirrors the worker's flavor choice from it; every covered
resource is listed, zero quotas included, because the hub recovers resource groups from
which resources a flavor lists. Usage is the quota reserved by workloads
(`flavorsReservation`): that is what blocks the next admission.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.api.core_v1 import ResourceList
from core.api.quantity import Quantity
from core.api.worker_capacity import ClusterQueueCapacity, FlavorResources
from core.engine.model import ClusterQueue, ClusterQueueStatus
from core.engine.quantity import format_quantity


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueueFigures:
    """A worker ClusterQueue's spec and the engine's current status of it."""

    spec: ClusterQueue
    status: ClusterQueueStatus


def resource_list(amounts: dict[str, int]) -> ResourceList:
    """Engine integers as canonical quantities, sorted by resource name."""
    return {r: Quantity(format_quantity(r, amounts[r])) for r in sorted(amounts)}


def cluster_queue_capacity(figures: ClusterQueueFigures) -> ClusterQueueCapacity:
    reserved = {(u.flavor, u.resource): u.total for u in figures.status.flavors_reservation}
    quota: list[FlavorResources] = []
    usage: list[FlavorResources] = []
    seen: set[str] = set()
    for group in figures.spec.resource_groups:
        for flavor in group.flavors:
            if flavor.name in seen:
                continue
            seen.add(flavor.name)
            nominal = {q.name: q.nominal for q in flavor.resources}
            covered = group.covered_resources
            quota.append(
                FlavorResources(
                    name=flavor.name,
                    resources=resource_list({r: nominal.get(r, 0) for r in covered}),
                )
            )
            usage.append(
                FlavorResources(
                    name=flavor.name,
                    resources=resource_list(
                        {r: reserved.get((flavor.name, r), 0) for r in covered}
                    ),
                )
            )
    return ClusterQueueCapacity(
        name=figures.spec.name,
        quota=quota,
        usage=usage,
        pending_workloads=figures.status.pending_workloads,
        admitted_workloads=figures.status.admitted_workloads,
    )
