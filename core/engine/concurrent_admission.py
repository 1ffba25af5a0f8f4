"""Concurrent admission (upstream's ConcurrentAdmission gate): one variant per flavor.

A job queued to a ClusterQueue with a concurrentAdmissionPolicy has a parent Workload (the
job's own) and one variant Workload per flavor of the queue's first resource group (the
manager creates them: `core.manager.variant_controller`). The variants queue and reserve
quota as any workload, each only on the flavor it is annotated with; the parent is never
queued nor charged: it carries its admitted variant's admission (`variant_family`).

This module answers the questions the queues and the scheduling cycle ask:
- is this workload a parent (never queued) or a variant (one flavor, never preempts — no
  variant's preemption gate is ever opened, where upstream opens one at a time);
- may this variant reserve now: not while a more preferred sibling holds quota; while a
  less preferred one does, under TryPreferredFlavors the variant evicts it (reason
  FlavorMigration) and waits for the job to move (up to the policy's
  lastAcceptableFlavor); under RetainFirstAdmission it waits.
Everything is off unless `EngineConfig.concurrent_admission` (the gate) is on.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.api.cluster_queue import MigrationMode
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.model import ConcurrentAdmission
from core.engine.workload_state import WorkloadState

MORE_FAVORABLE_ADMITTED = "A more favorable variant is already admitted"
RETAINED_ADMISSION = "Another variant is already admitted (RetainFirstAdmission)"
BELOW_LAST_ACCEPTABLE = "Target flavor is below LastAcceptableFlavorName"
PENDING_MIGRATION = "Pending the migration of 1 workload(s)"


def policy(state: ClusterState, cq: ClusterQueueState | None) -> ConcurrentAdmission | None:
    """The queue's policy, when the gate is on and the queue has one."""
    if cq is None or not state.config.concurrent_admission:
        return None
    return cq.spec.concurrent_admission


def is_variant(state: ClusterState, ws: WorkloadState) -> bool:
    return state.config.concurrent_admission and ws.spec.variant_of is not None


def is_parent(state: ClusterState, cq: ClusterQueueState, ws: WorkloadState) -> bool:
    """A workload of a concurrent-admission queue that is no variant: it is never queued."""
    return ws.spec.variant_of is None and policy(state, cq) is not None


def allowed_flavors(state: ClusterState, ws: WorkloadState) -> frozenset[str] | None:
    """The flavors the workload may be assigned; None: any (also with the gate off)."""
    allowed = ws.spec.allowed_flavors
    if allowed is None or not state.config.concurrent_admission:
        return None
    return frozenset(allowed)


def flavor_order(cq: ClusterQueueState) -> tuple[str, ...]:
    """The queue's flavors in preference order (its first resource group, as upstream)."""
    groups = cq.spec.resource_groups
    return tuple(f.name for f in groups[0].flavors) if groups else ()


def rank(order: tuple[str, ...], ws: WorkloadState) -> int | None:
    """Where the variant's flavor stands in `order` (0 is most preferred); None: its
    annotation names no flavor of the queue."""
    allowed = ws.spec.allowed_flavors
    if not allowed or allowed[0] not in order:
        return None
    return order.index(allowed[0])


def outranked(
    pol: ConcurrentAdmission, order: tuple[str, ...], ws: WorkloadState, admitted: WorkloadState
) -> bool:
    """Whether variant `ws` is to be deactivated while `admitted` carries the job."""
    if pol.mode == MigrationMode.RETAIN_FIRST_ADMISSION:
        return True
    mine, theirs = rank(order, ws), rank(order, admitted)
    if mine is None or theirs is None:
        return True
    if mine > theirs:
        return True
    last = pol.last_acceptable_flavor
    return last is not None and last in order and mine > order.index(last)


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why a variant may not reserve now; `migrate_from`: the sibling to evict first."""

    message: str
    migrate_from: WorkloadState | None = None


def blocked(state: ClusterState, ws: WorkloadState, cq: ClusterQueueState) -> Blocked | None:
    """Whether variant `ws` must wait for a sibling holding quota in `cq` (see module)."""
    pol = policy(state, cq)
    parent = ws.spec.variant_of
    if pol is None or parent is None:
        return None
    order = flavor_order(cq)
    mine = rank(order, ws)
    if mine is None:
        return None
    less_preferred: WorkloadState | None = None
    for key in sorted(state.variants.get(parent, ())):
        sibling = state.workloads.get(key)
        if sibling is None or sibling is ws or sibling.usage_cq != cq.name:
            continue
        theirs = rank(order, sibling)
        if theirs is None:
            continue
        if theirs < mine:
            return Blocked(MORE_FAVORABLE_ADMITTED)
        less_preferred = sibling
    if less_preferred is None:
        return None
    if pol.mode == MigrationMode.RETAIN_FIRST_ADMISSION:
        return Blocked(RETAINED_ADMISSION)
    last = pol.last_acceptable_flavor
    if last is not None and last in order and mine > order.index(last):
        return Blocked(BELOW_LAST_ACCEPTABLE)
    return Blocked(PENDING_MIGRATION, less_preferred)


def migration_message(ws: WorkloadState) -> str:
    """The Evicted message of the sibling giving way to `ws` (upstream's wording)."""
    return (
        f"Evicted to accommodate a workload (UID: {ws.spec.uid}) due to migration to more "
        "favorable resource flavor"
    )
