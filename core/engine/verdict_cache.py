"""Nomination verdicts that cannot have changed, kept so a cycle does not compute them again.

A head's nomination (flavor assignment, preemption search, partial admission) reads the
ClusterQueue and the cluster objects, the quota tree's usage and the admitted workloads
(candidates for preemption), and of the head itself only its ClusterQueue, priority,
namespace and pod sets (counts, per-pod requests, scheduling constraints). Two heads alike
in those, nominated with nothing committed in between, get the same verdict. Full cohorts
see that all the time: every new arrival and every workload a flush sent back is one more
head of a shape that was just found not to fit.

So a verdict that admits no one (no fit, or preemption without victims) is kept under the
head's `shape` with the `ClusterState.verdict_stamp` it was reached at. The stamp moves on
every change that may alter a verdict: quota charged or released or a victim evicted in
the head's cohort tree (its flush group), any cluster object upserted or deleted. Nodes and
pods are not among them: only topology-aware placements read them, and those are never
kept, so the pod churn of a busy cluster leaves kept verdicts in place. A kept
verdict of an older stamp is never used, so a head that may fit now is always nominated
afresh: no admission waits on the cache.

Verdicts are kept only where nothing else feeds them: not with fair sharing (shares move
with usage elsewhere), topology-aware flavors (placements read node state), a
`LowerOrNewerEqualPriority` policy (it compares the heads' times), a replaced workload
slice, or a head whose flavor search resumes where an earlier attempt stopped.
"""

from __future__ import annotations

from collections.abc import Hashable

from core.engine.cluster_state import ClusterQueueState, ClusterState
from core.engine.dispatch.fit_cache import shape_key
from core.engine.flavor_assignment import Assignment, Mode
from core.engine.model import PreemptionPolicy
from core.engine.workload_state import LastAssignment, WorkloadState

Shape = tuple[Hashable, ...]
Stamp = tuple[int, int]

NEWER_EQUAL = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY


def shape(ws: WorkloadState) -> Shape:
    """Everything of the head its nomination reads besides its ClusterQueue: the pod sets
    as written (`fit_cache.shape_key`) and as the engine counts them (counts left, per-pod
    requests with the namespace's defaults, the partial-admission minimum)."""
    counted = tuple(
        (count.count, spec.min_count, tuple(sorted(count.per_pod.items())))
        for count, spec in zip(ws.pod_sets, ws.spec.pod_sets, strict=True)
    )
    return (ws.priority, ws.spec.namespace, shape_key(ws.spec.pod_sets), counted)


def cacheable(state: ClusterState, ws: WorkloadState, cq: ClusterQueueState) -> bool:
    """Whether this head's verdict depends only on its shape and the epoch."""
    if state.config.fair_sharing is not None or cq.tas_flavors:
        return False
    preemption = cq.spec.preemption
    if NEWER_EQUAL in (preemption.within_cluster_queue, preemption.reclaim_within_cohort):
        return False
    if ws.spec.replaces or ws.spec.allowed_flavors is not None:
        return False
    last = ws.last_assignment
    # A search that resumes after the flavor tried last reads the head's own history.
    return last is None or cq.generation > last.generation


class VerdictCache:
    """Per ClusterQueue, verdicts by shape, valid while its `verdict_stamp` holds.

    The stamp is compared first, so a busy queue (a new stamp every cycle) costs a lookup,
    not a shape, per head.
    """

    __slots__ = ("_by_queue",)

    def __init__(self) -> None:
        self._by_queue: dict[str, tuple[Stamp, dict[Shape, Assignment]]] = {}

    def get(
        self, state: ClusterState, cq: ClusterQueueState, ws: WorkloadState
    ) -> Assignment | None:
        kept = self._by_queue.get(cq.name)
        if kept is None or kept[0] != state.verdict_stamp(cq):
            return None
        return kept[1].get(shape(ws))

    def keep(
        self,
        state: ClusterState,
        cq: ClusterQueueState,
        ws: WorkloadState,
        assignment: Assignment,
        targets: int,
    ) -> None:
        """Keep a verdict that admits no one; what an older stamp left is dropped."""
        if targets or assignment.tas or assignment.mode() == Mode.FIT:
            return
        stamp = state.verdict_stamp(cq)
        kept = self._by_queue.get(cq.name)
        if kept is None or kept[0] != stamp:
            kept = (stamp, {})
            self._by_queue[cq.name] = kept
        kept[1][shape(ws)] = assignment

    def forget(self, cluster_queue: str) -> None:
        self._by_queue.pop(cluster_queue, None)


def fresh_last(assignment: Assignment) -> LastAssignment:
    """A head's own copy of where the kept verdict's flavor search stopped."""
    last = assignment.last
    return LastAssignment([dict(tried) for tried in last.tried], last.generation)
