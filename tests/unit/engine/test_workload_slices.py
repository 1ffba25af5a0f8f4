"""Elastic jobs' workload slices in the engine (upstream's ElasticJobsViaWorkloadSlices).

A slice naming the one it replaces is admitted with the replaced slice's usage counted as
its own (only the difference must fit; it never preempts its predecessor), stays on the
flavors its predecessor runs on, and finishes it (WorkloadSliceReplaced) on admission.
A reserving workload scaled down in place holds only what it now counts.
"""

from __future__ import annotations

from core.api.workload_conditions import WorkloadReason
from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)


def _engine(flavors: dict[str, int], *, slices: bool = True) -> Engine:
    engine = Engine(EngineConfig(workload_slices=slices), clock=ManualClock(100.0))
    for name in flavors:
        engine.upsert_resource_flavor(ResourceFlavor(name=name))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=tuple(
                        FlavorQuotas(name=name, resources=(ResourceQuota(name="cpu", nominal=q),))
                        for name, q in flavors.items()
                    ),
                ),
            ),
        )
    )
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return engine


def _workload(name: str, count: int, replaces: str | None = None, t: float = 0.0) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        pod_sets=(PodSet(count=count, requests={"cpu": 1000}),),
        replaces=replaces,
        creation_time=t,
    )


def _cpu(engine: Engine) -> dict[str, int]:
    return {f: v for (f, r), v in engine.cluster_queue_usage("cq").items() if r == "cpu" and v}


def _finished_reason(engine: Engine, key: str) -> str | None:
    status = engine.workload_status(key)
    assert status is not None
    for cond in status.conditions:
        if cond.type == "Finished" and cond.status:
            return cond.reason
    return None


def test_a_slice_replacing_an_admitted_one_needs_only_the_difference_and_finishes_it() -> None:
    engine = _engine({"default": 4000})
    engine.add_workload(_workload("old", 2))
    assert [a.key for a in engine.schedule().admitted] == ["ns/old"]
    engine.add_workload(_workload("new", 3, replaces="ns/old", t=1.0))
    result = engine.schedule()
    assert [a.key for a in result.admitted] == ["ns/new"]
    assert not result.preempted
    assert result.replaced == {"ns/old": "cq"}
    assert _finished_reason(engine, "ns/old") == WorkloadReason.WORKLOAD_SLICE_REPLACED
    assert _cpu(engine) == {"default": 3000}


def test_a_slice_whose_difference_does_not_fit_waits_and_never_preempts_its_predecessor() -> None:
    engine = _engine({"default": 4000})
    engine.add_workload(_workload("old", 2))
    engine.add_workload(_workload("other", 1, t=0.5))
    admitted = engine.schedule().admitted + engine.schedule().admitted
    assert {a.key for a in admitted} == {"ns/old", "ns/other"}
    engine.add_workload(_workload("new", 4, replaces="ns/old", t=1.0))
    result = engine.schedule()
    assert not result.admitted
    assert not result.preempted
    assert _finished_reason(engine, "ns/old") is None
    assert _cpu(engine) == {"default": 3000}


def test_a_replacing_slice_stays_on_the_flavor_its_predecessor_runs_on() -> None:
    engine = _engine({"small": 3000, "big": 4000})
    engine.add_workload(_workload("blocker", 2))
    engine.schedule()
    engine.add_workload(_workload("old", 2, t=1.0))
    engine.schedule()
    engine.schedule()
    assert _cpu(engine) == {"small": 2000, "big": 2000}
    engine.finish("ns/blocker")
    engine.add_workload(_workload("new", 3, replaces="ns/old", t=2.0))
    admitted = engine.schedule().admitted
    assert [a.key for a in admitted] == ["ns/new"]
    assert admitted[0].admission.pod_set_assignments[0].flavors == {"cpu": "big"}
    assert _cpu(engine) == {"big": 3000}


def test_without_the_gate_a_replacing_slice_is_counted_in_full() -> None:
    engine = _engine({"default": 4000}, slices=False)
    engine.add_workload(_workload("old", 2))
    engine.schedule()
    engine.add_workload(_workload("new", 3, replaces="ns/old", t=1.0))
    assert not engine.schedule().admitted
    assert _finished_reason(engine, "ns/old") is None


def test_a_reserving_workload_scaled_down_in_place_releases_the_difference() -> None:
    engine = _engine({"default": 4000})
    engine.add_workload(_workload("elastic", 4))
    engine.schedule()
    assert _cpu(engine) == {"default": 4000}
    engine.add_workload(_workload("waiting", 2, t=1.0))
    assert not engine.schedule().admitted
    engine.update_workload(_workload("elastic", 1))
    assert _cpu(engine) == {"default": 1000}
    assert [a.key for a in engine.schedule().admitted] == ["ns/waiting"]
    assert _cpu(engine) == {"default": 3000}
