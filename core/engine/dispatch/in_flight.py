"""Work the hub has sent to a worker that the worker's report does not show yet.

A capacity report is a picture taken at its `observedTime`. At 50 jobs a second the hub
nominates dozens of workloads between two pictures, and judging each against the last
picture alone would send all of them to the first worker that looked free (the pile-up
bench/multikueue showed: 500 of 500 jobs on worker-1). So the hub keeps a ledger of its
own claims: a claim is made when a workload is nominated to a worker and holds the quota
its flavor plan would reserve there; it counts against that worker while the nomination
stands, and once the dispatch is over (admitted, withdrawn to another worker or gone) it
still counts until a report taken after that moment arrives — by then the worker's own
usage shows it, or shows it gone. Counting a claim twice for one report period errs on
the side of spreading, never of overfilling.

Everything here is pure: times are seconds since the epoch on the caller's clock, and
report times are the workers' `observedTime`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from core.engine.dispatch.capacity_snapshot import MAX_REPORT_AGE_SECONDS
from core.engine.dispatch.node_packing import PodGroup

Usage = Mapping[str, Mapping[str, int]]
"""Flavor → resource → quota amount."""
Pods = Mapping[str, tuple[PodGroup, ...]]
"""Flavor → the pods that will need room on its nodes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    worker: str
    cluster_queue: str | None
    usage: Usage = field(default_factory=dict)
    pods: Pods = field(default_factory=dict)
    settled_at: float | None = None
    """When the dispatch ended; None while the nomination stands."""


@dataclass(frozen=True, slots=True)
class WorkerLoad:
    """The claims counting against one worker: their number and, per ClusterQueue, quota."""

    claims: int = 0
    usage: Mapping[str, Usage] = field(default_factory=dict)
    """ClusterQueue → flavor → resource → amount."""
    pods: Pods = field(default_factory=dict)
    """Flavor → the claimed pods, to take from the report's free nodes."""
    version: int = 0
    """Names this set of claims: equal versions, equal claims (0: none; -1: not to be
    cached, as when a workload's own claim is left out)."""


NO_LOAD = WorkerLoad()


def add_usage(into: dict[str, dict[str, int]], usage: Usage, sign: int = 1) -> None:
    """Add (`sign` -1: take away) flavor → resource amounts in place; zeros are dropped."""
    for flavor, amounts in usage.items():
        per_flavor = into.setdefault(flavor, {})
        for resource, amount in amounts.items():
            total = per_flavor.get(resource, 0) + sign * amount
            if total:
                per_flavor[resource] = total
            else:
                per_flavor.pop(resource, None)
        if not per_flavor:
            del into[flavor]


class _Totals:
    """One worker's claims summed, kept up to date as claims come and go."""

    def __init__(self) -> None:
        self.count = 0
        self.usage: dict[str, dict[str, dict[str, int]]] = {}
        self.pods: dict[str, Pods] = {}
        """Workload key → its claimed pods (only claims that have some)."""

    def add(self, key: str, claim: Claim, sign: int) -> None:
        self.count += sign
        if claim.pods:
            if sign > 0:
                self.pods[key] = claim.pods
            else:
                self.pods.pop(key, None)
        if claim.cluster_queue is None:
            return
        queue = self.usage.setdefault(claim.cluster_queue, {})
        add_usage(queue, claim.usage, sign)
        if not queue:
            del self.usage[claim.cluster_queue]

    def load(self, minus: str | None, own: Claim | None, version: int) -> WorkerLoad:
        usage = {q: {f: dict(a) for f, a in fl.items()} for q, fl in self.usage.items()}
        count = self.count
        pods = self.pods
        if minus is not None and own is not None:
            copy = _Totals()
            copy.count, copy.usage, copy.pods = count, usage, dict(pods)
            copy.add(minus, own, -1)
            count, usage, pods = copy.count, copy.usage, copy.pods
            version = -1
        by_flavor: dict[str, list[PodGroup]] = {}
        for claimed in pods.values():
            for flavor, groups in claimed.items():
                by_flavor.setdefault(flavor, []).extend(groups)
        return WorkerLoad(
            claims=count,
            usage=usage,
            pods={flavor: tuple(groups) for flavor, groups in by_flavor.items()},
            version=version,
        )


class InFlightLedger:
    """The hub's claims per workload key (one worker each), see the module docstring.

    Sums per worker are kept as claims change, so judging a workload costs the number of
    workers, not the number of claims.
    """

    def __init__(self, *, settled_ttl: float = MAX_REPORT_AGE_SECONDS) -> None:
        # A settled claim is dropped after this long even if its worker never reports
        # again: a worker without a fresh report is not judged by quota at all.
        self.settled_ttl = settled_ttl
        self._claims: dict[str, Claim] = {}
        self._totals: dict[str, _Totals] = {}
        self._settled: dict[str, deque[tuple[float, str]]] = {}
        """Per worker, (settled_at, key) in the order claims settled."""
        self._versions: dict[str, int] = {}
        self._changes = 0

    def __len__(self) -> int:
        return len(self._claims)

    def _drop(self, key: str) -> None:
        claim = self._claims.pop(key, None)
        if claim is None:
            return
        totals = self._totals[claim.worker]
        totals.add(key, claim, -1)
        self._changed(claim.worker)
        if totals.count == 0:
            del self._totals[claim.worker]

    def _changed(self, worker: str) -> None:
        self._changes += 1
        self._versions[worker] = self._changes

    def _put(self, key: str, claim: Claim) -> None:
        self._drop(key)
        self._claims[key] = claim
        self._totals.setdefault(claim.worker, _Totals()).add(key, claim, 1)
        self._changed(claim.worker)

    def claim(
        self,
        key: str,
        worker: str,
        cluster_queue: str | None,
        usage: Usage,
        pods: Pods | None = None,
    ) -> None:
        """`key` is nominated to `worker`; a claim for another worker is replaced."""
        claim = Claim(worker=worker, cluster_queue=cluster_queue, usage=usage, pods=pods or {})
        self._put(key, claim)

    def claimed_worker(self, key: str) -> str | None:
        """The worker `key`'s standing nomination claims, if any."""
        claim = self._claims.get(key)
        return None if claim is None or claim.settled_at is not None else claim.worker

    def settle(self, key: str, now: float) -> None:
        """The dispatch of `key` is over; its claim lasts until the next report."""
        claim = self._claims.get(key)
        if claim is None or claim.settled_at is not None:
            return
        self._claims[key] = replace(claim, settled_at=now)
        self._settled.setdefault(claim.worker, deque()).append((now, key))

    def _expire(self, worker: str, seen: float | None, now: float) -> None:
        queue = self._settled.get(worker)
        while queue:
            settled_at, key = queue[0]
            caught_up = seen is not None and seen > settled_at
            if not caught_up and now - settled_at <= self.settled_ttl:
                break
            queue.popleft()
            claim = self._claims.get(key)
            # The key may have been claimed again since (a new dispatch): keep that claim.
            if claim is not None and claim.settled_at == settled_at and claim.worker == worker:
                self._drop(key)
        if queue is not None and not queue:
            del self._settled[worker]

    def loads(
        self,
        reported_at: Mapping[str, float | None],
        now: float,
        *,
        excluding: str | None = None,
    ) -> LedgerLoads:
        """What counts against each worker of `reported_at` (worker → when its report was
        taken). `excluding`: a workload being judged again, whose own claim is no load
        against itself. Settled claims a report has caught up with, or older than
        `settled_ttl`, are dropped here.
        """
        own = None if excluding is None else self._claims.get(excluding)
        for worker in list(self._settled):
            self._expire(worker, reported_at.get(worker), now)
        return LedgerLoads(self, own, excluding, tuple(reported_at))

    def _load_of(self, worker: str, own: Claim | None, excluding: str | None) -> WorkerLoad:
        totals = self._totals.get(worker)
        if totals is None:
            return NO_LOAD
        mine = own is not None and own.worker == worker
        if totals.count - (1 if mine else 0) <= 0:
            return NO_LOAD
        return totals.load(excluding if mine else None, own, self._versions.get(worker, 0))

    def _claim_count(self, worker: str, own: Claim | None) -> int:
        totals = self._totals.get(worker)
        if totals is None:
            return 0
        return totals.count - (1 if own is not None and own.worker == worker else 0)

    def _version_of(self, worker: str, own: Claim | None) -> int:
        totals = self._totals.get(worker)
        if totals is None:
            return 0
        if own is not None and own.worker == worker:
            return 0 if totals.count == 1 else -1
        return self._versions.get(worker, 0)


class LedgerLoads(Mapping[str, WorkerLoad]):
    """The ledger's loads for one decision, built only for the workers asked about (a
    decision that reuses cached verdicts needs only each worker's `version`)."""

    def __init__(
        self,
        ledger: InFlightLedger,
        own: Claim | None,
        excluding: str | None,
        workers: tuple[str, ...],
    ) -> None:
        self._ledger, self._own, self._excluding = ledger, own, excluding
        self._workers = workers
        self._built: dict[str, WorkerLoad] = {}

    def version(self, worker: str) -> int:
        return self._ledger._version_of(worker, self._own)

    def claim_count(self, worker: str) -> int:
        return self._ledger._claim_count(worker, self._own)

    def __getitem__(self, worker: str) -> WorkerLoad:
        load = self._built.get(worker)
        if load is None:
            load = self._ledger._load_of(worker, self._own, self._excluding)
            self._built[worker] = load
        if load is NO_LOAD:
            raise KeyError(worker)
        return load

    def __iter__(self) -> Iterator[str]:
        return (w for w in self._workers if w in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, worker: object) -> bool:
        if not isinstance(worker, str):
            return False
        try:
            self[worker]
        except KeyError:
            return False
        return True
