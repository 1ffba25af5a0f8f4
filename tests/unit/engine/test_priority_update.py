"""A Workload's spec.priority rewritten (its WorkloadPriorityClass's value changed, or its
job's priority-class label): the engine re-sorts its queue at once, as upstream's queue
manager does on the update, and an admitted workload whose priority dropped becomes a
victim for the workloads that were waiting on it."""

from __future__ import annotations

import dataclasses

from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)


def engine(cpu: int, within: PreemptionPolicy = PreemptionPolicy.NEVER) -> Engine:
    e = Engine(clock=ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            preemption=ClusterQueuePreemption(within_cluster_queue=within),
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=cpu),)
                        ),
                    ),
                ),
            ),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return e


def workload(name: str, created: float, priority: int, cls: str | None = None) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        creation_time=created,
        priority=priority,
        priority_class=cls,
        pod_sets=(PodSet(count=1, requests={"cpu": 1000}),),
    )


def order(e: Engine) -> list[str]:
    return [p.name for p in e.pending_workloads("cq")]


def test_a_raised_priority_moves_a_pending_workload_to_the_head_and_it_is_admitted_first() -> None:
    e = engine(cpu=0)
    first = workload("first", 1.0, 100)
    e.add_workload(first)
    e.add_workload(workload("second", 2.0, 100, cls="batch"))
    assert order(e) == ["first", "second"]

    e.update_workload(dataclasses.replace(workload("second", 2.0, 100, cls="batch"), priority=500))
    assert order(e) == ["second", "first"]
    assert [p.priority for p in e.pending_workloads("cq")] == [500, 100]

    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default", resources=(ResourceQuota(name="cpu", nominal=1000),)
                        ),
                    ),
                ),
            ),
        )
    )
    assert [a.key for a in e.schedule().admitted] == ["ns/second"]


def test_the_same_priority_written_again_changes_nothing() -> None:
    e = engine(cpu=0)
    e.add_workload(workload("a", 1.0, 100, cls="batch"))
    e.add_workload(workload("b", 2.0, 100, cls="batch"))
    assert e.update_workload(workload("b", 2.0, 100, cls="batch")) == {}
    assert order(e) == ["a", "b"]


def test_a_lowered_priority_makes_an_admitted_workload_a_victim_of_the_one_waiting_on_it() -> None:
    e = engine(cpu=1000, within=PreemptionPolicy.LOWER_PRIORITY)
    e.add_workload(workload("running", 1.0, 100, cls="high"))
    assert [a.key for a in e.schedule().admitted] == ["ns/running"]
    e.add_workload(workload("waiting", 2.0, 100, cls="high"))
    first = e.schedule()
    assert not first.admitted and not first.preempted  # equal priority: no victim
    assert not e.schedule().preempted  # and its verdict is kept while nothing changes

    e.update_workload(dataclasses.replace(workload("running", 1.0, 100), priority=10))
    cycle = e.schedule()
    assert [(p.victim, p.preemptor) for p in cycle.preempted] == [("ns/running", "ns/waiting")]
