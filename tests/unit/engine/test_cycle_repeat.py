"""`Engine.would_repeat`: when another cycle right now would reach the same verdicts.

A driver uses it to park blocked heads until something changes instead of retrying them
(a head waiting for its victims, a StrictFIFO head that does not fit).
"""

from __future__ import annotations

from dataclasses import replace

from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)


def engine(strategy: QueueingStrategy, within: PreemptionPolicy = PreemptionPolicy.NEVER) -> Engine:
    # As the hub runs it: a victim keeps its quota until its job is seen to stop.
    e = Engine(EngineConfig(release_quota_on_eviction=False), ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            queueing_strategy=strategy,
            preemption=ClusterQueuePreemption(within_cluster_queue=within),
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=4000),)
                        ),
                    ),
                ),
            ),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return e


def wl(name: str, cpu: int, created: float, priority: int = 0) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        creation_time=created,
        priority=priority,
        pod_sets=(PodSet(count=1, requests={"cpu": cpu}),),
    )


def test_a_strict_fifo_head_that_does_not_fit_is_parked_until_quota_frees() -> None:
    e = engine(QueueingStrategy.STRICT_FIFO)
    e.add_workload(wl("running", 3000, 1))
    assert [a.key for a in e.schedule().admitted] == ["ns/running"]
    e.add_workload(wl("big", 2000, 2))
    e.add_workload(wl("small", 500, 3))
    blocked = e.schedule()
    assert blocked.tried == frozenset({"ns/big"}) and not blocked.admitted
    # StrictFIFO keeps the head in front: the next cycle would try it alone again.
    assert e.next_heads() == frozenset({"ns/big"})
    assert e.would_repeat(blocked)
    # Repeating anyway proves the point: same head, same verdict.
    again = e.schedule()
    assert again.tried == blocked.tried and not again.admitted and e.would_repeat(again)
    e.finish("ns/running")
    assert [a.key for a in e.schedule().admitted] == ["ns/big"]


def test_a_preemptor_waiting_for_its_victim_is_parked_and_admitted_after_eviction() -> None:
    e = engine(QueueingStrategy.BEST_EFFORT_FIFO, PreemptionPolicy.LOWER_PRIORITY)
    e.add_workload(wl("low", 3000, 1, priority=1))
    e.schedule()
    e.add_workload(wl("high", 3000, 2, priority=10))
    preempting = e.schedule()
    assert [p.victim for p in preempting.preempted] == ["ns/low"]
    # Quota moved (a victim is being evicted): a driver must look again.
    assert not e.would_repeat(preempting)
    waiting = e.schedule()
    assert waiting.tried == frozenset({"ns/high"}) and not waiting.admitted
    assert not waiting.preempted
    assert e.would_repeat(waiting)
    # The victim stops: its quota comes back and the preemptor is admitted.
    e.complete_eviction("ns/low")
    done = e.schedule()
    assert [a.key for a in done.admitted] == ["ns/high"]


def test_other_heads_behind_a_parked_one_mean_another_cycle() -> None:
    e = engine(QueueingStrategy.BEST_EFFORT_FIFO)
    e.add_workload(wl("running", 3000, 1))
    e.schedule()
    e.add_workload(wl("big", 2000, 2))
    e.add_workload(wl("small", 500, 3))
    first = e.schedule()
    # BestEffortFIFO parks the big head; the small one behind it is the next head.
    assert first.tried == frozenset({"ns/big"}) and not first.admitted
    assert e.next_heads() == frozenset({"ns/small"})
    assert not e.would_repeat(first)
    second = e.schedule()
    assert [a.key for a in second.admitted] == ["ns/small"]
    # Nothing left to try: an empty cycle never asks for a repeat.
    empty = e.schedule()
    assert empty.heads == 0 and not e.would_repeat(empty)


def test_a_cycle_result_from_before_a_change_is_not_repeatable() -> None:
    e = engine(QueueingStrategy.STRICT_FIFO)
    e.add_workload(wl("running", 3000, 1))
    e.schedule()
    e.add_workload(wl("big", 2000, 2))
    blocked = e.schedule()
    assert e.would_repeat(blocked)
    # A higher-priority arrival becomes the head: the verdict may differ.
    e.add_workload(replace(wl("urgent", 1000, 3), priority=5))
    assert e.next_heads() == frozenset({"ns/urgent"})
    assert not e.would_repeat(blocked)
