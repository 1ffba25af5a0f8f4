"""Which worker should get a workload: the best one that fits, else fall back.

The capacity-aware dispatcher (`fleetq.dev/capacity-aware`) judges every candidate worker
of a MultiKueueConfig from its latest capacity report (`capacity_fit`), with the hub's own
claims not yet in that report counted as reserved quota (`in_flight`), then:

- nominates one worker that fits, chosen by the placement policy (`placement_policy`:
  spread by free share by default): one remote copy, no racing;
- when none fits, falls back to trying workers one after the other (Incremental mode),
  those without a fresh report first (they may well fit), then those that do not fit for
  now (quota or nodes in use), then those that do not fit as configured; capacity may free
  up and reports may be wrong, so no worker is ruled out for good.

How long to wait on a nominee, and the rule that only one worker is nominated at a time,
live in `nomination`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from core.engine.dispatch.capacity_fit import assess_worker, pods_by_flavor
from core.engine.dispatch.capacity_snapshot import MAX_REPORT_AGE_SECONDS, CapacitySnapshot
from core.engine.dispatch.fit_cache import CachedFit, FitCache, Judgement, fit_key, shape_key
from core.engine.dispatch.fit_verdict import FitVerdict, WorkerFit
from core.engine.dispatch.in_flight import (
    NO_LOAD,
    LedgerLoads,
    Pods,
    Usage,
    WorkerLoad,
    add_usage,
)
from core.engine.dispatch.node_packing import room_after
from core.engine.dispatch.placement_policy import (
    FittingWorker,
    PlacementPolicy,
    free_share_after,
    rank,
)
from core.engine.dispatch.quota_fit import plan_usage
from core.engine.model import PodSet, ResourceFlavor

CAPACITY_AWARE_DISPATCHER = "fleetq.dev/capacity-aware"


class PlacementMode(StrEnum):
    CAPACITY_AWARE = "CapacityAware"
    """A report says the nominee fits."""
    INCREMENTAL = "Incremental"
    """No report says any worker fits; workers are tried in turn."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerCandidate:
    """One worker of the MultiKueueConfig, with what the hub knows about it.

    `cluster_queue`: the ClusterQueue the worker's LocalQueue of the workload's queue name
    points to (None: no such LocalQueue). `flavor_specs`: the worker's ResourceFlavors, if
    the hub watches them (they let node selectors and taints narrow flavors).
    """

    name: str
    snapshot: CapacitySnapshot | None
    cluster_queue: str | None
    flavor_specs: Mapping[str, ResourceFlavor] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementDecision:
    """Verdicts per worker (config order) and what to do with them.

    `order` is the order to try workers in: in CAPACITY_AWARE mode the fitting workers
    (best first under the placement policy) and then the fallback order; in INCREMENTAL
    mode the fallback order. `usage`: per fitting worker, the quota the workload would
    reserve there (what the hub claims when it nominates that worker).
    """

    fits: tuple[WorkerFit, ...]
    mode: PlacementMode
    order: tuple[str, ...]
    usage: Mapping[str, Usage] = field(default_factory=dict)
    pods: Mapping[str, Pods] = field(default_factory=dict)

    @property
    def chosen(self) -> str | None:
        """The worker to nominate when a report says it fits; None means fall back."""
        return self.order[0] if self.mode is PlacementMode.CAPACITY_AWARE else None

    def verdict(self, worker: str) -> WorkerFit | None:
        for fit in self.fits:
            if fit.worker == worker:
                return fit
        return None


def _fallback_rank(fit: WorkerFit) -> int:
    if fit.verdict is FitVerdict.UNKNOWN:
        return 0
    if fit.reason is not None and fit.reason.transient:
        return 1
    return 2


def try_order(fits: Iterable[WorkerFit]) -> tuple[str, ...]:
    """Fitting workers first, then unknown, then not fitting for now, then not at all.

    Ties keep config order (the sort is stable).
    """
    ranked = sorted(fits, key=lambda f: -1 if f.verdict is FitVerdict.FITS else _fallback_rank(f))
    return tuple(f.worker for f in ranked)


def with_load(snapshot: CapacitySnapshot, load: WorkerLoad) -> CapacitySnapshot:
    """The report with the hub's claims in flight taken from it: added to its
    ClusterQueues' usage, and their pods placed on its free nodes."""
    if not load.usage and not load.pods:
        return snapshot
    queues = dict(snapshot.cluster_queues)
    for name, claimed in load.usage.items():
        queue = queues.get(name)
        if queue is None:
            continue
        usage = {flavor: dict(amounts) for flavor, amounts in queue.usage.items()}
        add_usage(usage, claimed)
        queues[name] = replace(queue, usage=usage)
    flavors = dict(snapshot.flavors)
    for flavor_name, groups in load.pods.items():
        room = flavors.get(flavor_name)
        if room is not None:
            flavors[flavor_name] = room_after(groups, room)
    return replace(snapshot, cluster_queues=queues, flavors=flavors)


def _judge(
    pod_sets: Sequence[PodSet],
    candidate: WorkerCandidate,
    load: WorkerLoad,
    *,
    now: float,
    max_age: float,
) -> Judgement:
    snapshot = candidate.snapshot
    if snapshot is not None:
        snapshot = with_load(snapshot, load)
    fit = assess_worker(
        pod_sets,
        worker=candidate.name,
        snapshot=snapshot,
        cluster_queue=candidate.cluster_queue,
        flavor_specs=candidate.flavor_specs,
        now=now,
        max_age=max_age,
    )
    queue = (
        None
        if snapshot is None or candidate.cluster_queue is None
        else snapshot.cluster_queues.get(candidate.cluster_queue)
    )
    if fit.verdict is not FitVerdict.FITS or queue is None:
        return Judgement(fit)
    takes = plan_usage(pod_sets, fit.flavors, queue)
    return Judgement(
        fit,
        usage=takes,
        pods={
            flavor: tuple(groups)
            for flavor, groups in pods_by_flavor(pod_sets, fit.flavors).items()
        },
        free_share_after=free_share_after(queue, takes),
        pending_workloads=queue.pending_workloads,
    )


def _load_version(loads: Mapping[str, WorkerLoad] | None, worker: str) -> int:
    if loads is None:
        return 0
    if isinstance(loads, LedgerLoads):
        return loads.version(worker)
    return loads.get(worker, NO_LOAD).version


def _claims(loads: Mapping[str, WorkerLoad] | None, worker: str) -> int:
    if loads is None:
        return 0
    if isinstance(loads, LedgerLoads):
        return loads.claim_count(worker)
    return loads.get(worker, NO_LOAD).claims


def _judge_cached(
    pod_sets: Sequence[PodSet],
    candidate: WorkerCandidate,
    loads: Mapping[str, WorkerLoad] | None,
    cache: FitCache | None,
    shape: Hashable,
    *,
    now: float,
    max_age: float,
) -> Judgement:
    """`_judge`, through the cache when the report is fresh and the claims nameable."""
    snapshot = candidate.snapshot
    version = _load_version(loads, candidate.name)
    key = None
    fresh = snapshot is not None and snapshot.is_fresh(now, max_age)
    if cache is not None and snapshot is not None and version >= 0 and fresh:
        key = fit_key(
            candidate.name,
            snapshot,
            version,
            candidate.cluster_queue,
            candidate.flavor_specs,
            shape,
        )
        entry = cache.get(key)
        if entry is not None:
            return entry.judgement
    load = NO_LOAD if loads is None else loads.get(candidate.name, NO_LOAD)
    judged = _judge(pod_sets, candidate, load, now=now, max_age=max_age)
    if cache is not None and key is not None and snapshot is not None:
        specs = candidate.flavor_specs
        flavors = () if specs is None else tuple(specs.values())
        cache.put(key, CachedFit(judged, snapshot, flavors))
    return judged


def decide_placement(
    pod_sets: Sequence[PodSet],
    candidates: Sequence[WorkerCandidate],
    *,
    now: float,
    max_age: float = MAX_REPORT_AGE_SECONDS,
    policy: PlacementPolicy = PlacementPolicy.SPREAD,
    loads: Mapping[str, WorkerLoad] | None = None,
    cache: FitCache | None = None,
) -> PlacementDecision:
    """Judge every candidate (config order; later duplicates ignored) and pick the way on.

    `loads`: the hub's claims in flight per worker (`InFlightLedger.loads`), counted as
    reserved quota on top of each report. `cache`: verdicts to reuse where neither the
    report, the claims nor the pod sets' shape changed (`fit_cache`).
    """
    seen: set[str] = set()
    fits = []
    fitting: list[FittingWorker] = []
    usage: dict[str, Usage] = {}
    pods: dict[str, Pods] = {}
    shape = shape_key(pod_sets) if cache is not None else None
    for candidate in candidates:
        if candidate.name in seen:
            continue
        seen.add(candidate.name)
        judged = _judge_cached(pod_sets, candidate, loads, cache, shape, now=now, max_age=max_age)
        fits.append(judged.fit)
        if judged.usage is not None and judged.free_share_after is not None:
            usage[candidate.name] = judged.usage
            pods[candidate.name] = judged.pods or {}
            fitting.append(
                FittingWorker(
                    worker=candidate.name,
                    position=len(fits) - 1,
                    free_share_after=judged.free_share_after,
                    claims_in_flight=_claims(loads, candidate.name),
                    pending_workloads=judged.pending_workloads,
                )
            )
    if not fitting:
        return PlacementDecision(
            fits=tuple(fits), mode=PlacementMode.INCREMENTAL, order=try_order(fits)
        )
    best = rank(policy, fitting)
    rest = tuple(w for w in try_order(fits) if w not in usage)
    return PlacementDecision(
        fits=tuple(fits),
        mode=PlacementMode.CAPACITY_AWARE,
        order=best + rest,
        usage=usage,
        pods=pods,
    )
