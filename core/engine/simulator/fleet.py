"""A fleet on a virtual clock: the hub's real dispatch logic, the workers as models.

What is real: every placement decision is `decide_placement` over the workers' capacity
snapshots with the hub's `InFlightLedger` (claims not yet in a report), and every
nomination goes through `PlacementState` with its timeout and withdrawal, exactly as the
capacity-aware dispatcher runs them. What is modelled: each worker is one ClusterQueue of
GPUs over identical nodes; it admits the copies it holds in arrival order whenever quota
and nodes allow (best-effort FIFO: a job that does not fit lets later ones pass), binds
pods first-fit to nodes and frees them when the job ends; every `report_interval_s` it
writes a capacity report if anything changed (else every 30 s, as the agent), which the
hub sees `report_lag_s` later; a nomination reaches
the worker `dispatch_latency_s` after the decision and its admission reaches the hub
`status_lag_s` after it happens.

So the curve of decisions per second, jobs per worker and time to admission can be
extended to hundreds of workers on one machine, where real lite workers stop at a few
dozen (bench/fleet measures the hub's CPU per decision on it). Pure: no wall clock, no
I/O; the same scenario always gives the same result.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from enum import IntEnum
from typing import cast

from core.engine.dispatch.capacity_snapshot import (
    REPORT_HEARTBEAT_SECONDS,
    CapacitySnapshot,
    FlavorSnapshot,
    QueueSnapshot,
)
from core.engine.dispatch.fit_cache import FitCache
from core.engine.dispatch.in_flight import InFlightLedger
from core.engine.dispatch.nomination import (
    GUESS_RECHECK_SECONDS,
    NominationPhase,
    PlacementState,
)
from core.engine.dispatch.placement import (
    PlacementDecision,
    PlacementMode,
    WorkerCandidate,
    decide_placement,
)
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.model import PodSet
from core.engine.nearest_rank import nearest_rank

GPU = "nvidia.com/gpu"
FLAVOR = "gpu"
QUEUE = "cq"
REPORTED_BLOCKS = 16
RECHECK_SLACK_S = 1e-6


@dataclass(frozen=True, slots=True, kw_only=True)
class JobShape:
    pods: int
    gpus_per_pod: int
    weight: float = 1.0


SMALL_AND_LARGE = (
    JobShape(pods=1, gpus_per_pod=1, weight=6.0),
    JobShape(pods=1, gpus_per_pod=4, weight=3.0),
    JobShape(pods=4, gpus_per_pod=8, weight=1.0),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetScenario:
    workers: int
    nodes_per_worker: int = 8
    gpus_per_node: int = 8
    jobs: int = 1000
    load: float = 0.7
    """Offered load as a share of the fleet's GPUs (sets the arrival rate)."""
    runtime_s: float = 60.0
    shapes: tuple[JobShape, ...] = SMALL_AND_LARGE
    policy: PlacementPolicy = PlacementPolicy.SPREAD
    report_interval_s: float = 1.0
    report_lag_s: float = 0.2
    dispatch_latency_s: float = 0.1
    status_lag_s: float = 0.2
    nomination_timeout_s: float = 60.0
    first_arrival_s: float = 1.0
    """When jobs start coming: by then the hub holds a report from every worker."""
    seed: int = 1

    @property
    def fleet_gpus(self) -> int:
        return self.workers * self.nodes_per_worker * self.gpus_per_node

    @property
    def mean_job_gpus(self) -> float:
        total = sum(s.weight for s in self.shapes)
        return sum(s.weight * s.pods * s.gpus_per_pod for s in self.shapes) / total

    @property
    def rate(self) -> float:
        """Jobs per second that keep `load` of the fleet's GPUs busy."""
        return self.load * self.fleet_gpus / (self.mean_job_gpus * self.runtime_s)


@dataclass(frozen=True, slots=True)
class _Job:
    key: str
    arrival: float
    shape: JobShape

    @property
    def gpus(self) -> int:
        return self.shape.pods * self.shape.gpus_per_pod

    def pod_sets(self) -> tuple[PodSet, ...]:
        return (
            PodSet(name="main", count=self.shape.pods, requests={GPU: self.shape.gpus_per_pod}),
        )


class _Worker:
    """One modelled worker: a GPU ClusterQueue over identical nodes."""

    def __init__(self, name: str, nodes: int, gpus_per_node: int) -> None:
        self.name = name
        self.quota = nodes * gpus_per_node
        self.free = [gpus_per_node] * nodes
        self.used = 0
        self.waiting: list[_Job] = []
        self.bound: dict[str, list[int]] = {}
        self.admitted_total = 0
        self._reported_state: tuple[int, int, int] | None = None
        self._reported_at = 0.0

    def place(self, job: _Job) -> list[int] | None:
        if self.used + job.gpus > self.quota:
            return None
        trial = list(self.free)
        nodes = []
        for _ in range(job.shape.pods):
            node = next((i for i, f in enumerate(trial) if f >= job.shape.gpus_per_pod), None)
            if node is None:
                return None
            trial[node] -= job.shape.gpus_per_pod
            nodes.append(node)
        return nodes

    def admit_what_fits(self) -> list[_Job]:
        admitted = []
        for job in list(self.waiting):
            nodes = self.place(job)
            if nodes is None:
                continue
            for node in nodes:
                self.free[node] -= job.shape.gpus_per_pod
            self.used += job.gpus
            self.bound[job.key] = nodes
            self.waiting.remove(job)
            self.admitted_total += 1
            admitted.append(job)
        return admitted

    def finish(self, job: _Job) -> None:
        for node in self.bound.pop(job.key):
            self.free[node] += job.shape.gpus_per_pod
        self.used -= job.gpus

    def withdraw(self, key: str) -> None:
        self.waiting = [j for j in self.waiting if j.key != key]

    def report_due(self, now: float) -> bool:
        """As the agent: a report when something changed, else a heartbeat every 30 s."""
        state = (self.used, len(self.waiting), len(self.bound))
        due = state != self._reported_state or now - self._reported_at >= REPORT_HEARTBEAT_SECONDS
        return due

    def report(self, now: float) -> CapacitySnapshot:
        self._reported_state = (self.used, len(self.waiting), len(self.bound))
        self._reported_at = now
        blocks = sorted(self.free, reverse=True)[:REPORTED_BLOCKS]
        flavor = FlavorSnapshot(
            name=FLAVOR,
            node_count=len(self.free),
            free={GPU: sum(self.free)},
            blocks=tuple({GPU: b} for b in blocks),
        )
        queue = QueueSnapshot(
            name=QUEUE,
            quota=((FLAVOR, {GPU: self.quota}),),
            usage={FLAVOR: {GPU: self.used}},
            pending_workloads=len(self.waiting),
            admitted_workloads=len(self.bound),
        )
        return CapacitySnapshot(
            cluster_name=self.name,
            observed_at=now,
            flavors={FLAVOR: flavor},
            cluster_queues={QUEUE: queue},
        )


class _Kind(IntEnum):
    # Order of events at the same instant: what frees room before what uses it.
    FINISH = 0
    ADMISSION_SEEN = 1
    REPORT_SEEN = 2
    REPORT_TAKEN = 3
    COPY_ARRIVES = 4
    ARRIVAL = 5
    RECHECK = 6


@dataclass(slots=True)
class FleetResult:
    workers: int
    policy: str
    jobs: int
    rate_per_s: float
    admitted: int
    decisions: int
    withdrawals: int
    per_worker: list[int]
    wait_p50_s: float | None
    wait_p99_s: float | None
    max_claims_in_flight: int
    virtual_span_s: float
    waits: list[float] = field(default_factory=list, repr=False)

    @property
    def spread(self) -> tuple[int, int]:
        """Fewest and most jobs any worker admitted."""
        return (min(self.per_worker), max(self.per_worker)) if self.per_worker else (0, 0)


class FleetSimulation:
    """See the module docstring; `run()` once."""

    def __init__(
        self,
        scenario: FleetScenario,
        *,
        fit_cache: bool = True,
    ) -> None:
        self.s = scenario
        self.fit_cache = FitCache() if fit_cache else None
        self.workers = [
            _Worker(f"worker-{i + 1}", scenario.nodes_per_worker, scenario.gpus_per_node)
            for i in range(scenario.workers)
        ]
        self.by_name = {w.name: w for w in self.workers}
        self.seen: dict[str, CapacitySnapshot] = {}
        self.ledger = InFlightLedger()
        self.states: dict[str, PlacementState] = {}
        self.jobs: dict[str, _Job] = {}
        self.idle: list[str] = []
        """Jobs waiting on the hub for a worker, in arrival order."""
        self.judged: dict[str, float] = {}
        self.guessed: set[str] = set()
        """Jobs nominated on a guess (no worker fitted): a new report judges them again."""
        self.events: list[tuple[float, int, int, object]] = []
        self._order = itertools.count()
        self.decisions = 0
        self.withdrawals = 0
        self.max_claims = 0
        self.waits: list[float] = []

    def _at(self, when: float, kind: _Kind, payload: object) -> None:
        heapq.heappush(self.events, (when, int(kind), next(self._order), payload))

    def _arrivals(self) -> None:
        rng = random.Random(self.s.seed)
        weights = [shape.weight for shape in self.s.shapes]
        for index in range(self.s.jobs):
            shape = rng.choices(self.s.shapes, weights)[0]
            arrival = self.s.first_arrival_s + index / self.s.rate
            job = _Job(f"ns/job-{index:06d}", arrival, shape)
            self._at(job.arrival, _Kind.ARRIVAL, job)

    def _candidates(self) -> list[WorkerCandidate]:
        return [
            WorkerCandidate(name=w.name, snapshot=self.seen.get(w.name), cluster_queue=QUEUE)
            for w in self.workers
        ]

    def _decide(self, job: _Job, now: float) -> PlacementDecision:
        self.decisions += 1
        reported = {name: snap.observed_at for name, snap in self.seen.items()}
        loads = self.ledger.loads(reported, now, excluding=job.key)
        return decide_placement(
            job.pod_sets(),
            self._candidates(),
            now=now,
            policy=self.s.policy,
            loads=loads,
            cache=self.fit_cache,
        )

    def _step(self, key: str, now: float) -> None:
        """Advance one job's nomination as the dispatcher's reconcile would."""
        job, state = self.jobs[key], self.states[key]
        self.judged[key] = now
        decision = self._decide(job, now)
        timeout = self.s.nomination_timeout_s
        before = state
        state = state.advance(decision, now=now, timeout=timeout)
        if state.phase is NominationPhase.WITHDRAWING and state.worker is not None:
            self.withdrawals += 1
            self.by_name[state.worker].withdraw(key)
            self.ledger.settle(key, now)
            state = state.withdrawn(state.worker, decision, now=now, timeout=timeout)
        self.states[key] = state
        guessed = (
            state.phase is NominationPhase.NOMINATED and state.mode is PlacementMode.INCREMENTAL
        )
        if guessed:
            self.guessed.add(key)
        else:
            self.guessed.discard(key)
        if state.phase is NominationPhase.NOMINATED and state.worker is not None:
            if before.phase is not NominationPhase.NOMINATED or before.worker != state.worker:
                usage = decision.usage.get(state.worker, {})
                pods = decision.pods.get(state.worker, {})
                self.ledger.claim(key, state.worker, QUEUE, usage, pods)
                self._at(now + self.s.dispatch_latency_s, _Kind.COPY_ARRIVES, (key, state.worker))
            deadline = state.deadline(timeout)
            if deadline is not None and deadline != before.deadline(timeout):
                # Just past the deadline: `since + timeout` may round below it.
                self._at(deadline + RECHECK_SLACK_S, _Kind.RECHECK, key)
            if key in self.idle:
                self.idle.remove(key)
        elif key not in self.idle:
            self.idle.append(key)
        self.max_claims = max(self.max_claims, len(self.ledger))

    def _retry_idle(self, now: float) -> None:
        """A new report: the jobs waiting for a worker, and those nominated on a guess,
        are judged again (as the hub's reconciler requeues them)."""
        due = now - GUESS_RECHECK_SECONDS
        guessed = [k for k in sorted(self.guessed) if self.judged.get(k, 0.0) <= due]
        for key in [*self.idle, *guessed]:
            self._step(key, now)

    def run(self) -> FleetResult:
        self._arrivals()
        for worker in self.workers:
            self._at(0.0, _Kind.REPORT_TAKEN, worker.name)
        pending = self.s.jobs
        now = 0.0
        while self.events and pending:
            now, kind, _, payload = heapq.heappop(self.events)
            if kind == _Kind.ARRIVAL:
                assert isinstance(payload, _Job)
                self.jobs[payload.key] = payload
                self.states[payload.key] = PlacementState()
                self._step(payload.key, now)
            elif kind == _Kind.REPORT_TAKEN:
                assert isinstance(payload, str)
                worker = self.by_name[payload]
                if worker.report_due(now):
                    self._at(now + self.s.report_lag_s, _Kind.REPORT_SEEN, worker.report(now))
                self._at(now + self.s.report_interval_s, _Kind.REPORT_TAKEN, payload)
            elif kind == _Kind.REPORT_SEEN:
                assert isinstance(payload, CapacitySnapshot)
                self.seen[payload.cluster_name] = payload
                self._retry_idle(now)
            elif kind == _Kind.COPY_ARRIVES:
                key, name = cast(tuple[str, str], payload)
                state = self.states.get(key)
                if (
                    state is None
                    or state.worker != name
                    or state.phase is not NominationPhase.NOMINATED
                ):
                    continue  # withdrawn before it arrived
                worker = self.by_name[name]
                worker.waiting.append(self.jobs[key])
                self._admit_on(worker, now)
            elif kind == _Kind.ADMISSION_SEEN:
                key, name = cast(tuple[str, str], payload)
                self.states[key] = self.states[key].admitted(name, now=now)
                self.guessed.discard(key)
                self.ledger.settle(key, now)
                pending -= 1
            elif kind == _Kind.FINISH:
                name, job = cast(tuple[str, _Job], payload)
                worker = self.by_name[name]
                worker.finish(job)
                self._admit_on(worker, now)
            elif kind == _Kind.RECHECK:
                assert isinstance(payload, str)
                state = self.states.get(payload)
                deadline = None if state is None else state.deadline(self.s.nomination_timeout_s)
                if deadline is not None and deadline <= now:
                    self._step(payload, now)
        per_worker = [w.admitted_total for w in self.workers]
        return FleetResult(
            workers=self.s.workers,
            policy=self.s.policy.value,
            jobs=self.s.jobs,
            rate_per_s=round(self.s.rate, 2),
            admitted=sum(per_worker),
            decisions=self.decisions,
            withdrawals=self.withdrawals,
            per_worker=per_worker,
            wait_p50_s=nearest_rank(self.waits, 0.5),
            wait_p99_s=nearest_rank(self.waits, 0.99),
            max_claims_in_flight=self.max_claims,
            virtual_span_s=round(now, 3),
            waits=self.waits,
        )

    def _admit_on(self, worker: _Worker, now: float) -> None:
        for job in worker.admit_what_fits():
            # Admitted on the worker: the wait ends here; the hub hears of it later.
            self.waits.append(now - job.arrival)
            self._at(now + self.s.status_lag_s, _Kind.ADMISSION_SEEN, (job.key, worker.name))
            self._at(now + self.s.runtime_s, _Kind.FINISH, (worker.name, job))


def simulate_fleet(
    scenario: FleetScenario,
    *,
    fit_cache: bool = True,
) -> FleetResult:
    """Run one scenario to the last admission (see the module docstring)."""
    return FleetSimulation(scenario, fit_cache=fit_cache).run()
