"""The index of ClusterQueues with heads / wanting a flush, and the queues reporting to it.

The engine-level property checks the index against a brute-force walk of every
ClusterQueue after each step of random drives, structural changes included.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    AdmissionCheck,
    AdmissionCheckRule,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    StopPolicy,
    Workload,
)
from core.engine.pending_queue import PendingQueue
from core.engine.queue_index import QueueIndex
from core.engine.workload_state import Where, WorkloadState

# --------------------------------------------------------------------------- QueueIndex


def test_heads_are_listed_in_name_order_whatever_the_order_they_arrive_in() -> None:
    index = QueueIndex(lambda name: "all")
    for name in ("m", "b", "z", "a", "b"):
        index.heads_changed(name, True)
    assert index.with_heads() == ["a", "b", "m", "z"]
    index.heads_changed("m", False)
    index.heads_changed("q", False)
    assert index.with_heads() == ["a", "b", "z"]


def test_flush_wanted_is_kept_per_group_and_regrouped_after_tree_changes() -> None:
    groups = {"a": "g1", "b": "g1", "c": "g2"}
    index = QueueIndex(groups.__getitem__)
    for name in ("c", "b", "a"):
        index.flush_wanted_changed(name, True)
    assert index.wanting_flush("g1") == ["a", "b"]
    assert index.wanting_flush("g2") == ["c"]
    index.flush_wanted_changed("b", False)
    assert index.wanting_flush("g1") == ["a"]

    groups["a"] = "g2"
    index.tree_changed()
    index.flush_wanted_changed("b", True)  # filed while groups are stale
    assert index.wanting_flush("g1") == ["b"]
    assert index.wanting_flush("g2") == ["a", "c"]
    assert index.all_wanting_flush() == ["a", "b", "c"]


def test_forget_drops_a_queue_everywhere() -> None:
    index = QueueIndex(lambda name: "g")
    index.heads_changed("a", True)
    index.flush_wanted_changed("a", True)
    index.forget("a")
    assert index.with_heads() == []
    assert index.wanting_flush("g") == []
    assert index.all_wanting_flush() == []


# --------------------------------------------------------------------------- queue reports


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, bool]] = []

    def heads_changed(self, name: str, has_heads: bool) -> None:
        self.events.append(("heads", name, has_heads))

    def flush_wanted_changed(self, name: str, wanted: bool) -> None:
        self.events.append(("flush", name, wanted))


def workload_state(name: str, priority: int = 0) -> WorkloadState:
    return WorkloadState(
        Workload(
            namespace="ns",
            name=name,
            uid=name,
            queue_name="lq",
            priority=priority,
            pod_sets=(PodSet(count=1, requests={"cpu": 1000}),),
        )
    )


def test_pending_queue_reports_only_transitions() -> None:
    rec = Recorder()
    queue = PendingQueue("cq", QueueingStrategy.BEST_EFFORT_FIFO, rec)
    a, b = workload_state("a", 1), workload_state("b")
    queue.push(a)
    queue.push(b)
    assert rec.events == [("heads", "cq", True)]

    rec.events.clear()
    assert queue.pop() is a
    # A pop makes the next flush meaningful: a failure after it must go back to the heap.
    assert rec.events == [("flush", "cq", True)]

    rec.events.clear()
    queue.park(a)
    assert queue.flush(lambda ws: False) == 0  # `a` stays parked: still wants a flush
    assert rec.events == []
    assert queue.flush(lambda ws: True) == 1
    assert rec.events == [("flush", "cq", False)]

    rec.events.clear()
    queue.pop()
    queue.pop()
    assert rec.events == [("flush", "cq", True), ("heads", "cq", False)]

    rec.events.clear()
    queue.flush(lambda ws: True)  # nothing parked: only the pop is answered
    assert rec.events == [("flush", "cq", False)]
    queue.push(b)
    queue.remove(b.key)
    assert rec.events[1:] == [("heads", "cq", True), ("heads", "cq", False)]


def test_requeue_after_a_flush_that_followed_the_pop_goes_back_to_the_heap() -> None:
    queue = PendingQueue("cq", QueueingStrategy.BEST_EFFORT_FIFO, Recorder())
    ws = workload_state("w")
    queue.push(ws)
    assert queue.pop() is ws
    queue.flush(lambda _: True)
    queue.requeue(ws, immediate=False, pending_preemption=False, backoff_expired=True)
    assert ws.key in queue and ws.key not in queue.inadmissible

    assert queue.pop() is ws
    queue.requeue(ws, immediate=False, pending_preemption=False, backoff_expired=True)
    assert ws.key in queue.inadmissible


# --------------------------------------------------------------------------- engine property

FLAVORS = ("f0", "f1")
COHORTS = ("c0", "c1", "c2")
QUEUES = ("q0", "q1", "q2", "q3", "q4")

Op = tuple[str, int, int]
OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add",
                "add",
                "add",
                "schedule",
                "schedule",
                "finish",
                "upsert_cq",
                "delete_cq",
                "upsert_cohort",
                "flavor",
                "check",
                "tick",
                "move",
            ]
        ),
        st.integers(0, 99),
        st.integers(0, 99),
    ),
    min_size=1,
    max_size=60,
)


def cluster_queue(name: str, a: int, b: int) -> ClusterQueue:
    flavor = FLAVORS[a % 2] if b % 7 else "missing"
    return ClusterQueue(
        name=name,
        cohort=None if a % 4 == 0 else COHORTS[a % 3],
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu",),
                flavors=(
                    FlavorQuotas(
                        name=flavor,
                        resources=(ResourceQuota(name="cpu", nominal=1000 * (b % 4)),),
                    ),
                ),
            ),
        ),
        stop_policy=StopPolicy.HOLD if b % 9 == 0 else StopPolicy.NONE,
        admission_checks=(AdmissionCheckRule(name="check"),) if b % 11 == 0 else (),
    )


def check_index(engine: Engine) -> None:
    state = engine._state
    cqs = state.cqs
    index = state.queues
    assert index.with_heads() == sorted(name for name, cq in cqs.items() if len(cq.queue))

    def wants(name: str) -> bool:
        queue = cqs[name].queue
        return bool(queue.inadmissible) or queue.flush_cycle < queue.pop_cycle

    assert index.all_wanting_flush() == sorted(name for name in cqs if wants(name))
    for cq in cqs.values():
        members = sorted(m.name for m in state.tree_cqs(cq) if wants(m.name))
        assert index.wanting_flush(state.flush_group(cq)) == members
        assert cq.inactive_reason() == cq._work_out_inactive_reason()
    assert engine.has_queued_work() == any(cq.active and len(cq.queue) for cq in cqs.values())
    # Running per-LocalQueue counts agree with a scan of the queues.
    for key in state.lqs:
        scanned = engine._lq_pending(key)
        stuck = sum(1 for ws in scanned if ws.where is Where.INADMISSIBLE)
        assert engine._lq_pending_counts(key) == (len(scanned), stuck)


def apply(engine: Engine, clock: ManualClock, op: Op, serial: int, running: list[str]) -> None:
    kind, a, b = op
    if kind == "add":
        engine.add_workload(
            Workload(
                namespace="ns",
                name=f"w{serial}",
                uid=f"w{serial}",
                queue_name=QUEUES[a % len(QUEUES)],
                priority=b % 3,
                creation_time=clock.now(),
                pod_sets=(PodSet(count=1 + a % 2, requests={"cpu": 500 * (1 + b % 3)}),),
            )
        )
    elif kind == "schedule":
        running.extend(adm.key for adm in engine.schedule().admitted)
    elif kind == "finish" and running:
        engine.finish(running.pop(a % len(running)))
    elif kind == "upsert_cq":
        engine.upsert_cluster_queue(cluster_queue(QUEUES[a % len(QUEUES)], a, b))
    elif kind == "delete_cq":
        engine.delete_cluster_queue(QUEUES[a % len(QUEUES)])
    elif kind == "upsert_cohort":
        # Parents only among earlier cohorts: no cycles (covered by the activity tests).
        index = a % len(COHORTS)
        parent = COHORTS[b % index] if index and b % 2 else None
        engine.upsert_cohort(Cohort(name=COHORTS[index], parent=parent))
    elif kind == "flavor":
        name = FLAVORS[a % 2]
        if b % 2:
            engine.delete_resource_flavor(name)
        else:
            engine.upsert_resource_flavor(ResourceFlavor(name=name))
    elif kind == "check":
        engine.upsert_admission_check(AdmissionCheck(name="check", active=bool(b % 2)))
    elif kind == "tick":
        clock.advance(1 + a)
        engine.tick()
    elif kind == "move" and state_workloads(engine):
        # A workload moved to another LocalQueue while it waits (or runs).
        workloads = state_workloads(engine)
        ws = workloads[a % len(workloads)]
        engine.update_workload(dataclasses.replace(ws.spec, queue_name=QUEUES[b % len(QUEUES)]))


def state_workloads(engine: Engine) -> list[WorkloadState]:
    return sorted(engine._state.workloads.values(), key=lambda ws: ws.key)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    setup=st.lists(st.tuples(st.integers(0, 99), st.integers(1, 99)), min_size=5, max_size=5),
    ops=OPS,
)
def test_index_matches_a_walk_over_every_cluster_queue(
    setup: list[tuple[int, int]], ops: list[Op]
) -> None:
    clock = ManualClock()
    engine = Engine(clock=clock)
    for name in FLAVORS:
        engine.upsert_resource_flavor(ResourceFlavor(name=name))
    for name, (a, b) in zip(QUEUES, setup, strict=True):
        engine.upsert_cluster_queue(cluster_queue(name, a, b))
        engine.upsert_local_queue(LocalQueue(namespace="ns", name=name, cluster_queue=name))
    check_index(engine)
    running: list[str] = []
    for serial, op in enumerate(ops):
        clock.advance(1)
        apply(engine, clock, op, serial, running)
        check_index(engine)
