"""Kept nomination verdicts (`core.engine.verdict_cache`): same decisions, no lost admission.

A head alike an earlier one (same ClusterQueue, priority, namespace, pod sets) reuses its
verdict only while nothing that could change it happened. Each test below changes one
such thing between the two heads and fails if the second head is not nominated afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli.simulate_command import read_generator_file
from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ClusterQueuePreemption,
    FlavorQuotas,
    LocalQueue,
    Node,
    PodSet,
    PreemptionPolicy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from core.engine.simulator.generator import load_scenario
from core.engine.simulator.simulation import Simulation

ROOT = Path(__file__).resolve().parents[3]


def queue(name: str, nominal: int, cohort: str | None = "team") -> ClusterQueue:
    return ClusterQueue(
        name=name,
        cohort=cohort,
        preemption=ClusterQueuePreemption(
            within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY,
            reclaim_within_cohort=PreemptionPolicy.ANY,
        ),
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu",),
                flavors=(
                    FlavorQuotas(
                        name="default", resources=(ResourceQuota(name="cpu", nominal=nominal),)
                    ),
                ),
            ),
        ),
    )


def engine(*queues: ClusterQueue) -> Engine:
    e = Engine(EngineConfig(release_quota_on_eviction=False), ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    for cq in queues:
        e.upsert_cluster_queue(cq)
        e.upsert_local_queue(LocalQueue(namespace=cq.name, name="lq", cluster_queue=cq.name))
    return e


def add(e: Engine, cq: str, name: str, cpu: int, priority: int = 0) -> str:
    e.add_workload(
        Workload(
            namespace=cq,
            name=name,
            uid=name,
            queue_name="lq",
            creation_time=float(len(name)),
            priority=priority,
            pod_sets=(PodSet(count=1, requests={"cpu": cpu}),),
        )
    )
    return f"{cq}/{name}"


def admitted(e: Engine, key: str) -> bool:
    status = e.workload_status(key)
    return status is not None and status.admission is not None


def test_node_and_pod_churn_leaves_kept_verdicts_of_queues_without_tas() -> None:
    # Only topology-aware placements read nodes and pods, and those are never kept: a busy
    # cluster's pod events must not make every head be nominated afresh.
    e = engine(queue("a", 4000, cohort=None))
    add(e, "a", "running", 4000)
    assert e.schedule().admitted
    add(e, "a", "first", 2000)
    assert e.schedule().evaluated == 1
    e.upsert_node(Node(name="n1", labels={"zone": "x"}, allocatable={"cpu": 8000}))
    e.upsert_non_tas_pod("a/pod-1", "n1", {"cpu": 1000})
    e.delete_non_tas_pod("a/pod-1")
    e.delete_node("n1")
    add(e, "a", "second", 2000)
    second = e.schedule()
    assert second.heads == 1 and second.evaluated == 0 and not second.admitted


def test_an_alike_head_reuses_the_verdict_while_nothing_changed() -> None:
    e = engine(queue("a", 4000, cohort=None))
    add(e, "a", "running", 4000)
    assert e.schedule().admitted
    add(e, "a", "first", 2000)
    first = e.schedule()
    assert first.evaluated == 1 and not first.admitted
    add(e, "a", "second", 2000)
    second = e.schedule()
    assert second.heads == 1 and second.evaluated == 0 and not second.admitted
    status = e.workload_status("a/second")
    assert status is not None
    message = status.condition("QuotaReserved")
    assert message is not None and "insufficient" in message.message


def test_freed_quota_lets_the_next_alike_head_in() -> None:
    e = engine(queue("a", 4000, cohort=None))
    add(e, "a", "running", 4000)
    e.schedule()
    add(e, "a", "first", 4000)
    e.schedule()
    e.finish("a/running")  # also flushes "first" back: both are tried again
    add(e, "a", "second", 4000)
    result = e.schedule()
    assert result.evaluated >= 1 and result.admitted


def test_more_quota_lets_the_next_alike_head_in() -> None:
    e = engine(queue("a", 4000, cohort=None))
    add(e, "a", "running", 4000)
    e.schedule()
    add(e, "a", "first", 2000)
    e.schedule()
    e.upsert_cluster_queue(queue("a", 8000, cohort=None))
    key = add(e, "a", "second", 2000)
    e.schedule()
    assert admitted(e, key) or admitted(e, "a/first")


def test_an_admission_in_the_cohort_expires_kept_verdicts() -> None:
    # An admission adds a preemption candidate and takes quota: verdicts may change.
    e = engine(queue("a", 4000), queue("b", 0))
    add(e, "a", "mine", 3000, priority=10)
    e.schedule()
    add(e, "a", "first", 2000, priority=10)
    assert not e.schedule().admitted
    add(e, "b", "borrower", 1000)  # borrows a's last cpu: charged, nothing released
    assert e.schedule().admitted
    add(e, "a", "second", 2000, priority=10)
    assert e.schedule().evaluated == 1


def test_an_eviction_in_the_cohort_expires_kept_verdicts() -> None:
    e = engine(queue("a", 4000), queue("b", 0))
    add(e, "a", "mine", 3000, priority=10)
    add(e, "b", "borrower", 1000)
    e.schedule()
    add(e, "a", "first", 2000, priority=10)
    e.schedule()
    e.evict("b/borrower", "Preempted", "test")  # still holds its quota until it stops
    add(e, "a", "second", 2000, priority=10)
    assert e.schedule().evaluated == 1


def test_a_change_in_another_cohort_keeps_the_verdict() -> None:
    e = engine(queue("a", 4000), queue("other", 4000, cohort="elsewhere"))
    add(e, "a", "running", 4000)
    e.schedule()
    add(e, "a", "first", 2000)
    e.schedule()
    add(e, "other", "job", 1000)
    assert e.schedule().admitted
    add(e, "a", "second", 2000)
    assert e.schedule().evaluated == 0


def decisions(config: str, *, keep_verdicts: bool) -> list[Any]:
    """Every cycle's admissions, preemptions and status changes of a simulated run."""
    scenario = load_scenario(read_generator_file(ROOT / config))
    simulation = Simulation(scenario)
    engine = simulation.engine
    if not keep_verdicts:
        engine._verdicts = None  # type: ignore[assignment]
    trace: list[Any] = []
    schedule = engine.schedule

    def traced() -> Any:
        result = schedule()
        trace.append(
            (
                engine.clock.now(),
                [(a.key, a.admission) for a in result.admitted],
                [(p.victim, p.preemptor, p.reason) for p in result.preempted],
                sorted((key, repr(status)) for key, status in result.changed.items()),
            )
        )
        return result

    engine.schedule = traced  # type: ignore[method-assign]
    simulation.run()
    return trace


def test_the_simulated_small_bench_decides_the_same_with_and_without_kept_verdicts() -> None:
    with_cache = decisions("bench/scheduler/configs/small.yaml", keep_verdicts=True)
    without = decisions("bench/scheduler/configs/small.yaml", keep_verdicts=False)
    assert with_cache == without
