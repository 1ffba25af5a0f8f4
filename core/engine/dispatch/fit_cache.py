"""Verdicts reused while nothing they depend on moved: the dispatcher's equivalence cache.

Judging one worker for one workload (`assess_worker` over the report with the claims in
flight applied) costs ~20 µs, and a placement judges every worker of the config, so at
hundreds of workers each decision took milliseconds, though in a stream of jobs only the
worker that got the last job changed. A verdict depends on the worker's report, the
claims counting against it, the ClusterQueue its LocalQueue points to, its flavor
definitions and the workload's pod sets (their shape, not their names or owners), so it
is kept under exactly those: the report and flavor objects by identity (a new report is
a new object), the claims by the ledger's per-worker version, the pod sets by value.
Freshness against the clock is checked before every lookup, never cached.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from core.engine.dispatch.capacity_snapshot import CapacitySnapshot
from core.engine.dispatch.fit_verdict import WorkerFit
from core.engine.dispatch.in_flight import Pods, Usage
from core.engine.model import PodSet, ResourceFlavor

DEFAULT_MAX_ENTRIES = 20_000


@dataclass(frozen=True, slots=True)
class Judgement:
    """One worker judged for one workload; the rest is set only when it fits."""

    fit: WorkerFit
    usage: Usage | None = None
    pods: Pods | None = None
    free_share_after: float | None = None
    pending_workloads: int = 0


@dataclass(frozen=True, slots=True)
class CachedFit:
    judgement: Judgement
    # Held so that the identities in the key stay unique while the entry lives.
    snapshot: CapacitySnapshot
    flavors: tuple[ResourceFlavor, ...]


def shape_key(pod_sets: Sequence[PodSet]) -> Hashable:
    """What of the pod sets a verdict depends on, hashable (pod set names are kept: the
    messages quote them)."""
    return tuple(
        (
            p.name,
            p.count,
            tuple(sorted(p.requests.items())),
            tuple(sorted(p.node_selector.items())),
            p.required_node_affinity,
            p.tolerations,
            p.topology_request,
        )
        for p in pod_sets
    )


def fit_key(
    worker: str,
    snapshot: CapacitySnapshot,
    load_version: int,
    cluster_queue: str | None,
    flavor_specs: Mapping[str, ResourceFlavor] | None,
    shape: Hashable,
) -> Hashable:
    specs = (
        None if flavor_specs is None else tuple((n, id(f)) for n, f in sorted(flavor_specs.items()))
    )
    return (worker, id(snapshot), load_version, cluster_queue, specs, shape)


class FitCache:
    """A bounded map of verdicts (least recently used dropped first)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, CachedFit] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> CachedFit | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def put(self, key: Hashable, entry: CachedFit) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
