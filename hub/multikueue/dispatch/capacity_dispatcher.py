"""fleetq's capacity-aware dispatcher (`fleetq.dev/capacity-aware`): one worker at a time.

For each workload waiting for a worker it judges the connected workers of the config from
their capacity reports and its own claims in flight (`InFlightLedger`: what it nominated
that the reports do not show yet) with `core.engine.dispatch.placement.decide_placement`,
and nominates one, through `PlacementState`: the best that fits under the placement
policy (spread by free share unless configured otherwise); when no fresh report says any
fits, the workers in turn (Incremental mode). A nominee that has not admitted
within `timeout_seconds` is withdrawn: its nomination is cleared (so its copy is removed)
and only once the copy is gone is the next worker nominated. So a workload has one copy
at a time and can trigger preemption on one worker only.

When no connected worker has a readable report at all (upstream Kueue workers, or worker
credentials that may not read WorkerCapacities) there is nothing to judge by, and trying
workers in turn would keep a job that fits only the last worker waiting one timeout per
worker before it: the workload races on every connected worker, as upstream's default
(AllAtOnce) does, and the first to admit wins.

What a restart needs is in the Workload status: `nominatedClusterNames` holds the nominee
(never more than one), and `PlacementState.resume` picks up from it with a fresh timer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Sequence

import structlog

from core.adapters.kueue_manifests import ManifestError, topology_request_from_dict
from core.engine.dispatch.fit_cache import FitCache
from core.engine.dispatch.in_flight import InFlightLedger
from core.engine.dispatch.nomination import (
    GUESS_RECHECK_SECONDS,
    NominationPhase,
    PlacementState,
)
from core.engine.dispatch.placement import (
    CAPACITY_AWARE_DISPATCHER,
    PlacementDecision,
    PlacementMode,
    WorkerCandidate,
    decide_placement,
)
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.model import PodSet
from core.engine.pod_templates import pod_set_from_template
from core.kube.object_meta import namespace_of
from hub.multikueue.dispatch.capacity_view import CapacitySource
from hub.multikueue.dispatch.dispatchers import DispatchRequest, Nomination, WorkerChoice
from hub.multikueue.dispatch.workload_facts import Json, queue_name, spec

WITHDRAW_RECHECK_SECONDS = 1.0


def pod_sets_of(local: Json) -> tuple[PodSet, ...]:
    """The engine's pod sets of a Workload, with their topology requests (empty when its
    spec cannot be read)."""
    out = []
    try:
        for entry in spec(local).get("podSets") or ():
            min_count = entry.get("minCount")
            pod_set = pod_set_from_template(
                name=str(entry.get("name") or "main"),
                count=int(entry.get("count", 1)),
                min_count=int(min_count) if min_count is not None else None,
                template=entry.get("template") or {},
            )
            request = topology_request_from_dict(entry.get("topologyRequest"))
            out.append(dataclasses.replace(pod_set, topology_request=request))
    except (TypeError, ValueError, AttributeError, ManifestError):
        return ()
    return tuple(out)


def _has_copy(workers: Sequence[WorkerChoice], name: str) -> bool:
    """Whether a copy may still be on `name` (a disconnected worker counts as without)."""
    return any(w.name == name and w.connected and w.has_copy for w in workers)


class CapacityAwareDispatcher:
    name = CAPACITY_AWARE_DISPATCHER

    def __init__(
        self,
        view: CapacitySource,
        *,
        timeout_seconds: float,
        policy: PlacementPolicy = PlacementPolicy.SPREAD,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.view = view
        self.timeout_seconds = timeout_seconds
        self.policy = policy
        self._wall_clock = wall_clock
        self._states: dict[str, PlacementState] = {}
        self._judged: dict[str, float] = {}
        """Workload key → when it was last judged (request.now)."""
        self.in_flight = InFlightLedger()
        self.fit_cache = FitCache()
        self.log = structlog.get_logger("hub.multikueue.dispatch")

    async def candidates(
        self, local: Json, workers: Sequence[WorkerChoice]
    ) -> list[WorkerCandidate]:
        namespace, queue = namespace_of(local), queue_name(local)
        out = []
        for worker in workers:
            if not worker.connected:
                continue
            snapshot = self.view.snapshot(worker.name)
            cluster_queue = None
            specs = None
            if snapshot is not None:
                lookup = await self.view.cluster_queue(worker.name, namespace, queue)
                if lookup.known:
                    cluster_queue = lookup.cluster_queue
                else:
                    snapshot = None  # cannot judge: unknown, never "does not fit"
            queue_snapshot = (
                None
                if snapshot is None or cluster_queue is None
                else snapshot.cluster_queues.get(cluster_queue)
            )
            if queue_snapshot is not None:
                names = tuple(flavor for flavor, _ in queue_snapshot.quota)
                specs = await self.view.flavor_specs(worker.name, names)
            out.append(
                WorkerCandidate(
                    name=worker.name,
                    snapshot=snapshot,
                    cluster_queue=cluster_queue,
                    flavor_specs=specs,
                )
            )
        return out

    async def decide(
        self, request: DispatchRequest, candidates: Sequence[WorkerCandidate] | None = None
    ) -> PlacementDecision:
        if candidates is None:
            candidates = await self.candidates(request.local, request.workers)
        pod_sets = pod_sets_of(request.local)
        if not pod_sets:
            candidates = [
                WorkerCandidate(name=c.name, snapshot=None, cluster_queue=None) for c in candidates
            ]
        reported_at = {
            c.name: None if c.snapshot is None else c.snapshot.observed_at for c in candidates
        }
        # A workload's own claim is no load against itself.
        loads = self.in_flight.loads(reported_at, request.now, excluding=request.key)
        return decide_placement(
            pod_sets,
            candidates,
            now=request.now,
            policy=self.policy,
            loads=loads,
            cache=self.fit_cache,
        )

    def _track_claim(
        self,
        key: str,
        state: PlacementState,
        decision: PlacementDecision,
        candidates: Sequence[WorkerCandidate],
    ) -> None:
        """Keep the ledger in step with the nomination: one claim, on the nominee."""
        if state.phase is NominationPhase.NOMINATED and state.worker is not None:
            if self.in_flight.claimed_worker(key) == state.worker:
                return
            queue = next((c.cluster_queue for c in candidates if c.name == state.worker), None)
            usage = decision.usage.get(state.worker, {})
            pods = decision.pods.get(state.worker, {})
            self.in_flight.claim(key, state.worker, queue, usage, pods)
        elif state.phase is NominationPhase.IDLE:
            self.in_flight.settle(key, self._wall_clock())

    def _blind(self, workers: Sequence[WorkerChoice]) -> tuple[str, ...]:
        """The connected workers, when not one of them has a readable report; else ()."""
        connected = tuple(w.name for w in workers if w.connected)
        if any(self.view.snapshot(name) is not None for name in connected):
            return ()
        return connected

    def _race(self, request: DispatchRequest, names: tuple[str, ...]) -> Nomination:
        if self._states.pop(request.key, None) is not None or request.nominated != names:
            self.log.info("multikueue.placement", workload=request.key, phase="Racing")
        self._judged.pop(request.key, None)
        self.in_flight.settle(request.key, self._wall_clock())
        return Nomination(names)

    async def nominate(self, request: DispatchRequest) -> Nomination:
        blind = self._blind(request.workers)
        if blind:
            return self._race(request, blind)
        now, timeout = request.now, self.timeout_seconds
        known = {w.name for w in request.workers}
        state = self._states.get(request.key)
        if state is None:
            nominated = [n for n in request.nominated if n in known]
            # Several nominees: a race is over (ours while blind, or another dispatcher's
            # before a restart); judge afresh rather than keep whichever came first.
            state = PlacementState.resume(nominated if len(nominated) == 1 else (), None, now)
        candidates = await self.candidates(request.local, request.workers)
        decision = await self.decide(request, candidates)
        previous = state
        if state.phase is not NominationPhase.WITHDRAWING:
            state = state.advance(decision, now=now, timeout=timeout)
        withdrawing = state.worker if state.phase is NominationPhase.WITHDRAWING else None
        if withdrawing is not None and not _has_copy(request.workers, withdrawing):
            state = state.withdrawn(withdrawing, decision, now=now, timeout=timeout)
        self._states[request.key] = state
        self._judged[request.key] = now
        self._track_claim(request.key, state, decision, candidates)
        if state != previous:
            self.log.info(
                "multikueue.placement",
                workload=request.key,
                phase=state.phase.value,
                worker=state.worker,
                mode=None if state.mode is None else state.mode.value,
                verdicts={f.worker: f.verdict.value for f in decision.fits},
            )
        deadline = state.deadline(timeout)
        if deadline is not None:
            recheck: float | None = max(0.0, deadline - now)
        elif state.phase is NominationPhase.WITHDRAWING:
            recheck = WITHDRAW_RECHECK_SECONDS
        else:
            recheck = None
        return Nomination(state.nominated_cluster_names, recheck_after=recheck)

    def capacity_sensitive(self) -> Collection[str]:
        """Workloads nominated on a guess (Incremental mode) and not judged in the last
        `GUESS_RECHECK_SECONDS`: a report that shows another worker fitting moves them on
        at once (`next_candidate`)."""
        due = self._wall_clock() - GUESS_RECHECK_SECONDS
        return [
            key
            for key, state in self._states.items()
            if state.phase is NominationPhase.NOMINATED
            and state.mode is PlacementMode.INCREMENTAL
            and self._judged.get(key, 0.0) <= due
        ]

    def forget(self, key: str) -> None:
        self._states.pop(key, None)
        self._judged.pop(key, None)
        self.in_flight.settle(key, self._wall_clock())
