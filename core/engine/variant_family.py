"""A concurrent-admission parent and its variants kept consistent after every engine step.

Upstream's concurrent-admission controller does these steps with API writes; the engine
owns workload status, so it applies them at once (the driver writes the outcome):
- the parent finished: every variant finishes; the parent deactivated: every variant is;
- the parent holds an admission whose variant lost it or is evicted: the parent is
  evicted (reason VariantEvicted), so its job stops; a variant's eviction completes (its
  quota goes back) only once the parent holds no reservation, so quota is never released
  while the job may still run on it; any other evicted variant gives its quota back now;
- every variant inactive, none holding quota, the parent active: all are reactivated;
- a variant admitted: the variants it outranks are deactivated (`concurrent_admission.
  outranked`), and a parent without admission takes the variant's — QuotaReserved and
  Admitted, with no usage of its own (the variant holds the quota).
Each step is idempotent, so settling a family twice changes nothing the second time.
"""

from __future__ import annotations

from core.api.workload_conditions import WorkloadReason
from core.engine import concurrent_admission as ca
from core.engine.cluster_state import ClusterState
from core.engine.lifecycle import Lifecycle
from core.engine.workload_state import FINISHED, WorkloadState

VARIANT_EVICTED_MESSAGE = "Admitted variant was evicted"
_MAX_ROUNDS = 4


def settle(state: ClusterState, lifecycle: Lifecycle) -> None:
    """Settle the family of every changed workload that is a parent or a variant."""
    done: set[str] = set()
    for _ in range(_MAX_ROUNDS):
        parents = set()
        for key in state.dirty:
            ws = state.workloads.get(key)
            if ws is None:
                continue
            parent = ws.spec.variant_of or (key if key in state.variants else None)
            if parent is not None and parent not in done:
                parents.add(parent)
        if not parents:
            return
        for key in sorted(parents):
            done.add(key)
            parent_ws = state.workloads.get(key)
            if parent_ws is not None:
                settle_family(state, lifecycle, parent_ws)


def family_of(state: ClusterState, parent: WorkloadState) -> list[WorkloadState]:
    """The parent's variants, most preferred flavor first."""
    cq = state.cqs.get(parent.cluster_queue or "")
    order = ca.flavor_order(cq) if cq is not None else ()
    found = [v for k in state.variants.get(parent.key, ()) if (v := state.workloads.get(k))]

    def position(v: WorkloadState) -> tuple[int, str]:
        r = ca.rank(order, v)
        return (len(order) if r is None else r, v.key)

    return sorted(found, key=position)


def carried(parent: WorkloadState, family: list[WorkloadState]) -> WorkloadState | None:
    """The variant of the flavor of the parent's admission, if the engine knows it (after
    a restart the parent may be read before its variants: it is then left as it is)."""
    admission = parent.admission
    if admission is None:
        return None
    flavors = {f for psa in admission.pod_set_assignments for f in psa.flavors.values()}
    for v in family:
        allowed = v.spec.allowed_flavors
        if allowed and flavors == {allowed[0]}:
            return v
    return None


def settle_family(state: ClusterState, lifecycle: Lifecycle, parent: WorkloadState) -> None:
    cq = state.cqs.get(parent.cluster_queue or "")
    pol = ca.policy(state, cq)
    if cq is None or pol is None or ca.is_variant(state, parent):
        return
    family = family_of(state, parent)
    if parent.is_finished:
        _finish_all(lifecycle, parent, family)
        return
    if not parent.active:
        for v in family:
            if v.active:
                lifecycle.deactivate(v)
    held = carried(parent, family)
    if (
        parent.has_quota_reservation
        and not parent.is_evicted
        and held is not None
        and (held.is_evicted or not held.has_quota_reservation)
    ):
        lifecycle.evict(parent, WorkloadReason.VARIANT_EVICTED.value, VARIANT_EVICTED_MESSAGE)
    for v in family:
        if (
            v.is_evicted
            and v.has_quota_reservation
            and (v is not held or not parent.has_quota_reservation)
        ):
            lifecycle.complete_eviction(v)
    if not parent.active:
        return
    if not parent.has_quota_reservation and not any(
        v.active or v.has_quota_reservation for v in family
    ):
        # Every variant is inactive and none holds quota (the parent was deactivated and
        # is active again, say): all of them try again, as upstream reactivates them.
        for v in family:
            if not v.is_finished:
                lifecycle.reactivate(v)
    admitted = next((v for v in family if v.is_admitted and not v.is_evicted), None)
    if admitted is None:
        return
    order = ca.flavor_order(cq)
    for v in family:
        if v is not admitted and v.active and ca.outranked(pol, order, v, admitted):
            lifecycle.deactivate(v)
    if not parent.has_quota_reservation:
        _carry(state, lifecycle, parent, admitted)


def _finish_all(lifecycle: Lifecycle, parent: WorkloadState, family: list[WorkloadState]) -> None:
    cond = parent.conditions.get(FINISHED)
    succeeded = cond is not None and cond.reason == WorkloadReason.SUCCEEDED.value
    message = cond.message if cond is not None else ""
    for v in family:
        if not v.is_finished:
            lifecycle.finish(v, succeeded, message)


def _carry(
    state: ClusterState, lifecycle: Lifecycle, parent: WorkloadState, variant: WorkloadState
) -> None:
    """The parent takes the admitted variant's admission, charging nothing."""
    now = state.now()
    admission = variant.admission
    if admission is None:
        return
    parent.admission = admission
    parent.cluster_queue = admission.cluster_queue
    parent.mark_reserved(
        f"Quota reserved in ClusterQueue {admission.cluster_queue} by variant {variant.spec.name}",
        now,
    )
    state.dirty.add(parent.key)
    lifecycle.admit_if_ready(parent)
