"""Workload slices: an elastic job scaled up gets a new Workload that replaces the old one.

Upstream's ElasticJobsViaWorkloadSlices: the job's pods keep running on the old slice's
quota while the new, larger slice waits; the new slice is nominated and admitted as if
the old slice's usage were already its own (only the difference has to fit, so it never
preempts its own predecessor), and the moment it reserves quota the old slice is
finished with reason WorkloadSliceReplaced, which gives its quota back. A slice naming
a workload that is not reserving in the same ClusterQueue and namespace is scheduled as
any other workload.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from core.api.workload_conditions import WorkloadReason
from core.api.workload_slices import REPLACED_MESSAGE
from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.lifecycle import Lifecycle
from core.engine.quota_tree import add_usages, remove_usages
from core.engine.workload_state import WorkloadState


def replaced_slice(
    state: ClusterState, ws: WorkloadState, cq: ClusterQueueState
) -> WorkloadState | None:
    """The slice `ws` replaces, when it holds quota in `cq` (same namespace); else None."""
    key = ws.spec.replaces
    if key is None or not state.config.workload_slices or key == ws.key:
        return None
    old = state.workloads.get(key)
    if (
        old is None
        or old.usage_cq != cq.name
        or old.spec.namespace != ws.spec.namespace
        or not old.has_quota_reservation
        or old.is_finished
    ):
        return None
    return old


@contextmanager
def set_aside(state: ClusterState, old: WorkloadState | None) -> Iterator[None]:
    """While inside, the replaced slice holds no quota and is no preemption candidate."""
    if old is None:
        yield
        return
    cq = state.cqs.get(old.usage_cq or "")
    if cq is None:
        yield
        return
    remove_usages(cq.node, old.usage)
    state.topology.remove_usage(old.tas_usage)
    del cq.reserving[old.key]
    try:
        yield
    finally:
        cq.reserving[old.key] = old
        add_usages(cq.node, old.usage)
        state.topology.add_usage(old.tas_usage)


def kept_flavors(old: WorkloadState | None) -> dict[str, dict[str, str]]:
    """Pod set -> resource -> flavor the replaced slice was admitted on."""
    if old is None or old.admission is None:
        return {}
    return {psa.name: dict(psa.flavors) for psa in old.admission.pod_set_assignments}


def retire(lifecycle: Lifecycle, old: WorkloadState) -> None:
    """The new slice is about to reserve: finish the old one, releasing its quota."""
    lifecycle.finish(
        old,
        succeeded=False,
        message=REPLACED_MESSAGE,
        reason=WorkloadReason.WORKLOAD_SLICE_REPLACED,
    )
