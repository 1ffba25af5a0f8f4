"""Properties of the engine on random queues and workloads (hypothesis).

Every check here is computed independently of the engine, from the decisions it returns:
quota arithmetic follows upstream's rules (scheduling.md §3) for CQs directly under a root
cohort, written out plainly below.

1. No admission ever exceeds what quota and limits allow.
2. Usage returns to zero once everything has finished.
3. A preemption set holds no workload that was unnecessary: putting back any single
   victim leaves the preemptor unable to fit.
4. The same input gives the same decisions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig, FairSharingConfig
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    CycleResult,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    workload_key,
)

CPU = "cpu"
NAMESPACE = "team"
PROPERTY_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------- the world

FlavorResource = tuple[str, str]


@dataclass(frozen=True, slots=True)
class QueueQuota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True, slots=True)
class QueueDef:
    name: str
    cohort: str | None
    quotas: dict[str, QueueQuota]
    """Per flavor, CPU in milli-units; every queue lists every flavor, in world order."""
    within: PreemptionPolicy
    reclaim: PreemptionPolicy


@dataclass(frozen=True, slots=True)
class JobDef:
    name: str
    queue: str
    priority: int
    pods: int
    cpu_per_pod: int

    @property
    def key(self) -> str:
        return workload_key(NAMESPACE, self.name)

    @property
    def total(self) -> int:
        return self.pods * self.cpu_per_pod


@dataclass(frozen=True, slots=True)
class World:
    flavors: tuple[str, ...]
    queues: tuple[QueueDef, ...]
    jobs: tuple[JobDef, ...]
    fair_sharing: bool
    ops: tuple[int, ...]
    """0: create the next job; 1: run a cycle; 2+: finish the (op - 2)-th running job."""

    def queue(self, name: str) -> QueueDef:
        return next(q for q in self.queues if q.name == name)

    def members(self, cohort: str) -> list[QueueDef]:
        return [q for q in self.queues if q.cohort == cohort]


WITHIN = st.sampled_from(
    [
        PreemptionPolicy.NEVER,
        PreemptionPolicy.LOWER_PRIORITY,
        PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    ]
)
RECLAIM = st.sampled_from(
    [PreemptionPolicy.NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY]
)
EAGER_WITHIN = st.sampled_from(
    [PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY]
)
EAGER_RECLAIM = st.sampled_from([PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY])
OPS = st.sampled_from((0, 0, 0, 1, 1, 1, 2, 3))
"""Mostly creating jobs and running cycles, sometimes finishing a running job."""


@st.composite
def queue_quotas(draw: st.DrawFn, in_cohort: bool) -> QueueQuota:
    nominal = draw(st.integers(0, 6)) * 1000
    if not in_cohort:
        return QueueQuota(nominal, None, None)
    borrowing = draw(st.none() | st.integers(0, 8).map(lambda v: v * 1000))
    lending = draw(st.none() | st.integers(0, nominal // 1000).map(lambda v: v * 1000))
    return QueueQuota(nominal, borrowing, lending)


@st.composite
def worlds(
    draw: st.DrawFn, *, single_flavor: bool = False, max_jobs: int = 14, rising: bool = False
) -> World:
    """Random queues and jobs; ``rising`` orders jobs by priority so later ones preempt."""
    flavors = ("f0",) if single_flavor else draw(st.sampled_from([("f0",), ("f0", "f1")]))
    within, reclaim = (EAGER_WITHIN, EAGER_RECLAIM) if rising else (WITHIN, RECLAIM)
    cohort_sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    loners = draw(st.integers(0, 1))
    queues: list[QueueDef] = []
    for c_idx, size in enumerate(cohort_sizes):
        for _ in range(size):
            name = f"cq{len(queues)}"
            quotas = {f: draw(queue_quotas(in_cohort=True)) for f in flavors}
            queues.append(QueueDef(name, f"co{c_idx}", quotas, draw(within), draw(reclaim)))
    for _ in range(loners):
        name = f"cq{len(queues)}"
        quotas = {f: draw(queue_quotas(in_cohort=False)) for f in flavors}
        queues.append(QueueDef(name, None, quotas, draw(within), PreemptionPolicy.NEVER))
    job_count = draw(st.integers(1, max_jobs))
    priorities = draw(st.lists(st.integers(0, 3), min_size=job_count, max_size=job_count))
    if rising:
        priorities.sort()
    jobs = tuple(
        JobDef(
            name=f"job{i}",
            queue=draw(st.sampled_from(queues)).name,
            priority=priority,
            pods=draw(st.integers(1, 3)),
            cpu_per_pod=draw(st.integers(1, 4)) * 500,
        )
        for i, priority in enumerate(priorities)
    )
    if rising:  # fill the queues with the early (low) jobs, then let later ones push in
        ops = tuple(op for _ in range(job_count) for op in (0, 1, 1, draw(OPS)))
    else:
        ops = tuple(draw(st.lists(OPS, min_size=job_count, max_size=4 * job_count)))
    return World(tuple(flavors), tuple(queues), jobs, draw(st.booleans()), ops)


# --------------------------------------------------------------------------- driving


def build_engine(world: World) -> tuple[Engine, ManualClock]:
    clock = ManualClock(1000.0)
    config = EngineConfig(fair_sharing=FairSharingConfig() if world.fair_sharing else None)
    engine = Engine(config, clock)
    for flavor in world.flavors:
        engine.upsert_resource_flavor(ResourceFlavor(name=flavor))
    engine.upsert_namespace(Namespace(name=NAMESPACE))
    for q in world.queues:
        flavors = tuple(
            FlavorQuotas(
                name=f,
                resources=(
                    ResourceQuota(
                        name=CPU,
                        nominal=q.quotas[f].nominal,
                        borrowing_limit=q.quotas[f].borrowing_limit,
                        lending_limit=q.quotas[f].lending_limit,
                    ),
                ),
            )
            for f in world.flavors
        )
        engine.upsert_cluster_queue(
            ClusterQueue(
                name=q.name,
                cohort=q.cohort,
                resource_groups=(ResourceGroup(covered_resources=(CPU,), flavors=flavors),),
                preemption=ClusterQueuePreemption(
                    within_cluster_queue=q.within, reclaim_within_cohort=q.reclaim
                ),
            )
        )
        engine.upsert_local_queue(
            LocalQueue(namespace=NAMESPACE, name=q.name, cluster_queue=q.name)
        )
    return engine, clock


def job_workload(job: JobDef, created: float) -> Workload:
    return Workload(
        namespace=NAMESPACE,
        name=job.name,
        uid=f"uid-{job.name}",
        queue_name=job.queue,
        pod_sets=(PodSet(count=job.pods, requests={CPU: job.cpu_per_pod}),),
        priority=job.priority,
        creation_time=created,
    )


@dataclass
class Running:
    """What the decisions so far say is holding quota: key -> (queue, flavor, amount)."""

    holders: dict[str, tuple[str, str, int]] = field(default_factory=dict)

    def usage(self) -> dict[tuple[str, str], int]:
        totals: dict[tuple[str, str], int] = {}
        for queue, flavor, amount in self.holders.values():
            totals[(queue, flavor)] = totals.get((queue, flavor), 0) + amount
        return totals


@dataclass
class Cycle:
    """One scheduling cycle's decisions, and the holders right after it."""

    result: CycleResult
    after: dict[str, tuple[str, str, int]]


def drive(world: World) -> Iterator[Cycle]:
    """Play the world's ops on a fresh engine, then drain it; yield every cycle."""
    engine, clock = build_engine(world)
    jobs = {job.key: job for job in world.jobs}
    running = Running()
    next_job = 0

    def cycle() -> Cycle:
        result = engine.schedule()
        for record in result.preempted:
            assert record.victim in running.holders, f"{record.victim} preempted but not running"
            running.holders.pop(record.victim)
        for admitted in result.admitted:
            assert admitted.key not in running.holders, f"{admitted.key} admitted twice"
            job = jobs[admitted.key]
            assert admitted.admission.cluster_queue == job.queue
            (psa,) = admitted.admission.pod_set_assignments
            assert psa.count == job.pods
            assert psa.resource_usage[CPU] == job.total
            running.holders[admitted.key] = (job.queue, psa.flavors[CPU], job.total)
        return Cycle(result, dict(running.holders))

    for op in world.ops:
        clock.advance(1.0)
        if op == 0 and next_job < len(world.jobs):
            engine.add_workload(job_workload(world.jobs[next_job], clock.now()))
            next_job += 1
        elif op == 1:
            yield cycle()
        elif op >= 2 and running.holders:
            victim = sorted(running.holders)[(op - 2) % len(running.holders)]
            engine.finish(victim)
            running.holders.pop(victim)
    for job in world.jobs[next_job:]:
        clock.advance(1.0)
        engine.add_workload(job_workload(job, clock.now()))
    for _ in range(4 * len(world.jobs) + 10):
        clock.advance(1.0)
        outcome = cycle()
        yield outcome
        for key in sorted(running.holders):
            engine.finish(key)
        running.holders.clear()
        for _ in range(3):
            clock.advance(1.0)
            engine.tick()
    # finish anything the last cycle admitted
    for key in sorted(running.holders):
        engine.finish(key)
    running.holders.clear()
    yield Cycle(CycleResult(), {})


# --------------------------------------------------------------------------- quota math


def local_quota(q: QueueQuota) -> int:
    """Quota a queue keeps from its cohort: nominal minus lendingLimit (0 when unset)."""
    return q.nominal - q.lending_limit if q.lending_limit is not None else 0


def quota_violations(world: World, usage: dict[tuple[str, str], int]) -> list[str]:
    problems: list[str] = []
    for flavor in world.flavors:
        for q in world.queues:
            quota = q.quotas[flavor]
            used = usage.get((q.name, flavor), 0)
            if q.cohort is None and used > quota.nominal:
                problems.append(f"{q.name}/{flavor} uses {used} > nominal {quota.nominal}")
            if quota.borrowing_limit is not None and used > quota.nominal + quota.borrowing_limit:
                problems.append(f"{q.name}/{flavor} uses {used} > nominal + borrowingLimit")
        for cohort in {q.cohort for q in world.queues if q.cohort}:
            members = world.members(cohort)
            pool = sum(m.quotas[flavor].nominal - local_quota(m.quotas[flavor]) for m in members)
            drawn = sum(
                max(0, usage.get((m.name, flavor), 0) - local_quota(m.quotas[flavor]))
                for m in members
            )
            if drawn > pool:
                problems.append(f"{cohort}/{flavor} draws {drawn} > lendable {pool}")
    return problems


def available(world: World, usage: dict[tuple[str, str], int], name: str, flavor: str) -> int:
    """What a queue could still admit in a flavor, borrowing as its limits allow."""
    q = world.queue(name)
    quota = q.quotas[flavor]
    used = usage.get((name, flavor), 0)
    if q.cohort is None:
        return max(0, quota.nominal - used)
    members = world.members(q.cohort)
    pool = sum(m.quotas[flavor].nominal - local_quota(m.quotas[flavor]) for m in members)
    drawn = sum(
        max(0, usage.get((m.name, flavor), 0) - local_quota(m.quotas[flavor])) for m in members
    )
    local = local_quota(quota)
    from_cohort = pool - drawn
    if quota.borrowing_limit is not None:
        cap = (quota.nominal - local) - max(0, used - local) + quota.borrowing_limit
        from_cohort = min(from_cohort, cap)
    return max(0, max(0, local - used) + from_cohort)


def fits_without_borrowing(
    world: World, usage: dict[tuple[str, str], int], name: str, flavor: str, amount: int
) -> bool:
    used = usage.get((name, flavor), 0)
    nominal = world.queue(name).quotas[flavor].nominal
    return used + amount <= nominal and amount <= available(world, usage, name, flavor)


# --------------------------------------------------------------------------- properties


@PROPERTY_SETTINGS
@given(worlds())
def test_admissions_never_exceed_quota_or_limits(world: World) -> None:
    for cycle in drive(world):
        usage = Running(cycle.after).usage()
        assert quota_violations(world, usage) == []


@PROPERTY_SETTINGS
@given(worlds())
def test_usage_returns_to_zero_when_everything_finished(world: World) -> None:
    engine_usage: dict[str, int] = {}
    engine, clock = build_engine(world)
    jobs = {job.key: job for job in world.jobs}
    for job in world.jobs:
        clock.advance(1.0)
        engine.add_workload(job_workload(job, clock.now()))
    admitted_ever: set[str] = set()
    for _ in range(4 * len(world.jobs) + 10):
        clock.advance(1.0)
        result = engine.schedule()
        running = [a.key for a in result.admitted]
        admitted_ever.update(running)
        for key in running:
            engine.finish(key)
        for _ in range(3):
            clock.advance(1.0)
            engine.tick()
    for q in world.queues:
        status = engine.cluster_queue_status(q.name)
        assert status is not None
        engine_usage[q.name] = sum(u.total for u in status.flavors_reservation)
        engine_usage[q.name] += sum(u.total for u in status.flavors_usage)
        assert status.reserving_workloads == 0
        assert status.admitted_workloads == 0
    assert engine_usage == {q.name: 0 for q in world.queues}
    # Everything that could ever fit on its own was admitted at some point.
    for key, job in jobs.items():
        if any(job.total <= available(world, {}, job.queue, f) for f in world.flavors):
            assert key in admitted_ever, f"{key} fits an empty cluster but was never admitted"


@settings(PROPERTY_SETTINGS, max_examples=250)
@given(worlds(single_flavor=True, max_jobs=12, rising=True))
def test_preemption_sets_hold_no_unnecessary_victim(world: World) -> None:
    flavor = world.flavors[0]
    jobs = {job.key: job for job in world.jobs}
    for cycle in drive(world):
        preemptors = {record.preemptor for record in cycle.result.preempted}
        if len(preemptors) != 1:
            continue  # with several preemptors, one's victims make room for the other
        (preemptor,) = preemptors
        job = jobs[preemptor]
        victims = {record.victim for record in cycle.result.preempted}
        after = Running(cycle.after).usage()
        for victim in victims:
            victim_job = jobs[victim]
            with_victim = dict(after)
            slot = (victim_job.queue, flavor)
            with_victim[slot] = with_victim.get(slot, 0) + victim_job.total
            assert not fits_without_borrowing(world, with_victim, job.queue, flavor, job.total), (
                f"{preemptor} would still fit with {victim} back: {sorted(victims)}"
            )


def decisions(world: World) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for cycle in drive(world):
        out.append(
            (
                tuple((a.key, a.admission) for a in cycle.result.admitted),
                tuple((p.victim, p.preemptor, p.reason) for p in cycle.result.preempted),
                tuple(sorted(cycle.result.changed.items())),
            )
        )
    return out


@PROPERTY_SETTINGS
@given(worlds())
def test_same_input_gives_the_same_decisions(world: World) -> None:
    assert decisions(world) == decisions(world)


# --------------------------------------------------------------------------- the checks check


def two_queue_world(lending: int | None, borrowing: int | None) -> World:
    queues = (
        QueueDef(
            "a",
            "co",
            {"f0": QueueQuota(2000, borrowing, None)},
            PreemptionPolicy.NEVER,
            PreemptionPolicy.NEVER,
        ),
        QueueDef(
            "b",
            "co",
            {"f0": QueueQuota(4000, None, lending)},
            PreemptionPolicy.NEVER,
            PreemptionPolicy.NEVER,
        ),
    )
    return World(("f0",), queues, (), False, ())


def test_quota_check_catches_borrowing_beyond_limit_and_lending() -> None:
    assert quota_violations(two_queue_world(None, None), {("a", "f0"): 6000}) == []
    assert quota_violations(two_queue_world(None, None), {("a", "f0"): 6500}) != []
    assert quota_violations(two_queue_world(None, 1000), {("a", "f0"): 3500}) != []
    # b lends only 1 cpu: a may use 3 cpu in total, b keeps 3 for itself.
    lends_one = two_queue_world(1000, None)
    assert quota_violations(lends_one, {("a", "f0"): 3000}) == []
    assert quota_violations(lends_one, {("a", "f0"): 3500}) != []
    assert quota_violations(lends_one, {("a", "f0"): 3000, ("b", "f0"): 3000}) == []
    assert quota_violations(lends_one, {("a", "f0"): 3000, ("b", "f0"): 3500}) != []


def test_available_follows_limits_and_what_others_use() -> None:
    assert available(two_queue_world(None, None), {}, "a", "f0") == 6000
    assert available(two_queue_world(None, 1000), {}, "a", "f0") == 3000
    assert available(two_queue_world(1000, None), {}, "a", "f0") == 3000
    assert available(two_queue_world(1000, None), {}, "b", "f0") == 6000
    assert available(two_queue_world(1000, None), {("a", "f0"): 3000}, "b", "f0") == 3000
    world = two_queue_world(None, None)
    assert fits_without_borrowing(world, {}, "a", "f0", 2000)
    assert not fits_without_borrowing(world, {}, "a", "f0", 2500)
