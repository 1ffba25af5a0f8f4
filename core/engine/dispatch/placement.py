"""Which worker should get a workload: the first in config order that fits, else fall back.

The capacity-aware dispatcher (`fleetq.dev/capacity-aware`) judges every candidate worker
of a MultiKueueConfig from its latest capacity report (`capacity_fit`), then:

- nominates the first worker, in config order, that fits: one remote copy, no racing;
- when none fits, falls back to trying workers one after the other (Incremental mode),
  those without a fresh report first (they may well fit), then those that do not fit for
  now (quota or nodes in use), then those that do not fit as configured; capacity may free
  up and reports may be wrong, so no worker is ruled out for good.

How long to wait on a nominee, and the rule that only one worker is nominated at a time,
live in `nomination`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.engine.dispatch.capacity_fit import assess_worker
from core.engine.dispatch.capacity_snapshot import MAX_REPORT_AGE_SECONDS, CapacitySnapshot
from core.engine.dispatch.fit_verdict import FitVerdict, WorkerFit
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
    (config order) and then the fallback order; in INCREMENTAL mode the fallback order.
    """

    fits: tuple[WorkerFit, ...]
    mode: PlacementMode
    order: tuple[str, ...]

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


def decide_placement(
    pod_sets: Sequence[PodSet],
    candidates: Sequence[WorkerCandidate],
    *,
    now: float,
    max_age: float = MAX_REPORT_AGE_SECONDS,
) -> PlacementDecision:
    """Judge every candidate (config order; later duplicates ignored) and pick the way on."""
    seen: set[str] = set()
    fits = []
    for candidate in candidates:
        if candidate.name in seen:
            continue
        seen.add(candidate.name)
        fits.append(
            assess_worker(
                pod_sets,
                worker=candidate.name,
                snapshot=candidate.snapshot,
                cluster_queue=candidate.cluster_queue,
                flavor_specs=candidate.flavor_specs,
                now=now,
                max_age=max_age,
            )
        )
    any_fits = any(f.verdict is FitVerdict.FITS for f in fits)
    return PlacementDecision(
        fits=tuple(fits),
        mode=PlacementMode.CAPACITY_AWARE if any_fits else PlacementMode.INCREMENTAL,
        order=try_order(fits),
    )
