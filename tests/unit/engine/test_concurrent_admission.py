"""Concurrent admission in the engine (upstream's ConcurrentAdmission gate).

A parent (a workload of a ClusterQueue with a concurrentAdmissionPolicy) is never queued;
each of its variants may take only its annotated flavor; the parent carries the admitted
variant's admission without usage of its own; under TryPreferredFlavors a variant of a
more preferred flavor that fits makes its admitted sibling give way (FlavorMigration),
the parent moves, and the less preferred variant is deactivated.
"""

from __future__ import annotations

import dataclasses

from core.api.cluster_queue import MigrationMode
from core.engine.clock import ManualClock
from core.engine.config import EngineConfig
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    ConcurrentAdmission,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    WorkloadStatus,
)

FLAVORS = ("reservation", "spot")


def _queue(quotas: dict[str, int], mode: MigrationMode) -> ClusterQueue:
    return ClusterQueue(
        name="cq",
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu",),
                flavors=tuple(
                    FlavorQuotas(name=name, resources=(ResourceQuota(name="cpu", nominal=q),))
                    for name, q in quotas.items()
                ),
            ),
        ),
        concurrent_admission=ConcurrentAdmission(mode=mode),
    )


def _engine(
    quotas: dict[str, int],
    *,
    gate: bool = True,
    mode: MigrationMode = MigrationMode.TRY_PREFERRED_FLAVORS,
    release_on_eviction: bool = True,
) -> Engine:
    engine = Engine(
        EngineConfig(concurrent_admission=gate, release_quota_on_eviction=release_on_eviction),
        clock=ManualClock(100.0),
    )
    for name in quotas:
        engine.upsert_resource_flavor(ResourceFlavor(name=name))
    engine.upsert_cluster_queue(_queue(quotas, mode))
    engine.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return engine


def _workload(name: str, *, variant_of: str | None = None, flavor: str | None = None) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        pod_sets=(PodSet(count=1, requests={"cpu": 200}),),
        variant_of=variant_of,
        allowed_flavors=(flavor,) if flavor is not None else None,
    )


def _family(engine: Engine) -> None:
    engine.add_workload(_workload("job"))
    for flavor in FLAVORS:
        engine.add_workload(_workload(f"job-{flavor}", variant_of="ns/job", flavor=flavor))


def _admit(engine: Engine, cycles: int = 3) -> list[str]:
    """Workloads admitted over a few cycles (each cycle tries one head per queue)."""
    return [a.key for _ in range(cycles) for a in engine.schedule().admitted]


def _status(engine: Engine, key: str) -> WorkloadStatus:
    status = engine.workload_status(key)
    assert status is not None
    return status


def _flavor(engine: Engine, key: str) -> str | None:
    admission = _status(engine, key).admission
    if admission is None:
        return None
    return admission.pod_set_assignments[0].flavors["cpu"]


def _true(engine: Engine, key: str, type_: str) -> bool:
    cond = _status(engine, key).condition(type_)
    return cond is not None and cond.status


def _usage(engine: Engine) -> dict[str, int]:
    return {f: v for (f, r), v in engine.cluster_queue_usage("cq").items() if r == "cpu" and v}


def test_a_variant_is_assigned_only_its_annotated_flavor() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000})
    engine.add_workload(_workload("only-spot", variant_of="ns/parent", flavor="spot"))
    result = engine.schedule()
    assert [a.key for a in result.admitted] == ["ns/only-spot"]
    assert _flavor(engine, "ns/only-spot") == "spot"


def test_a_variant_whose_flavor_is_full_stays_pending_though_another_flavor_has_room() -> None:
    engine = _engine({"reservation": 5000, "spot": 0})
    engine.add_workload(_workload("only-spot", variant_of="ns/parent", flavor="spot"))
    assert engine.schedule().admitted == []
    reserved = _status(engine, "ns/only-spot").condition("QuotaReserved")
    assert reserved is not None and not reserved.status
    assert "not allowed by the workload's" in reserved.message


def test_the_parent_is_never_queued_and_carries_its_admitted_variant_without_usage() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000})
    _family(engine)
    assert _admit(engine) == ["ns/job-reservation"]  # the sibling waits: one admission per job
    assert _true(engine, "ns/job", "Admitted")
    assert _flavor(engine, "ns/job") == "reservation"
    assert _usage(engine) == {"reservation": 200}  # the variant's quota, not twice
    assert not _status(engine, "ns/job-spot").active  # outranked by the admitted one


def test_try_preferred_flavors_migrates_the_parent_when_the_preferred_flavor_frees() -> None:
    engine = _engine({"reservation": 0, "spot": 5000})
    _family(engine)
    assert _admit(engine) == ["ns/job-spot"]
    assert _flavor(engine, "ns/job") == "spot"
    assert _status(engine, "ns/job-reservation").active  # more preferred: it keeps trying

    engine.upsert_cluster_queue(
        _queue({"reservation": 5000, "spot": 5000}, MigrationMode.TRY_PREFERRED_FLAVORS)
    )
    engine.schedule()  # the reservation variant fits: the spot one gives way
    spot = _status(engine, "ns/job-spot").condition("Evicted")
    assert spot is not None and spot.reason == "FlavorMigration"
    parent = _status(engine, "ns/job").condition("Evicted")
    assert parent is not None and parent.reason == "VariantEvicted"

    assert _admit(engine) == ["ns/job-reservation"]
    assert _true(engine, "ns/job", "Admitted")
    assert _flavor(engine, "ns/job") == "reservation"
    assert not _status(engine, "ns/job-spot").active
    assert _usage(engine) == {"reservation": 200}


def test_the_sibling_keeps_its_quota_until_the_parents_job_has_stopped() -> None:
    engine = _engine({"reservation": 0, "spot": 5000}, release_on_eviction=False)
    _family(engine)
    _admit(engine)
    engine.upsert_cluster_queue(
        _queue({"reservation": 5000, "spot": 5000}, MigrationMode.TRY_PREFERRED_FLAVORS)
    )
    engine.schedule()
    assert _true(engine, "ns/job", "Evicted")
    assert _usage(engine) == {"spot": 200}  # the job may still run on spot
    assert _admit(engine) == []

    engine.complete_eviction("ns/job")  # the job controller stopped the job
    assert _usage(engine) == {}
    assert _admit(engine) == ["ns/job-reservation"]
    assert _flavor(engine, "ns/job") == "reservation"


def test_retain_first_admission_deactivates_every_other_variant() -> None:
    engine = _engine({"reservation": 0, "spot": 5000}, mode=MigrationMode.RETAIN_FIRST_ADMISSION)
    _family(engine)
    assert _admit(engine) == ["ns/job-spot"]
    assert not _status(engine, "ns/job-reservation").active


def test_the_parent_finishing_finishes_its_variants_and_frees_their_quota() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000})
    _family(engine)
    _admit(engine)
    engine.finish("ns/job", succeeded=True)
    assert _true(engine, "ns/job-reservation", "Finished")
    assert _true(engine, "ns/job-spot", "Finished")
    assert _usage(engine) == {}


def test_with_the_gate_off_the_policy_and_the_annotation_mean_nothing() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000}, gate=False)
    engine.add_workload(_workload("job"))
    engine.add_workload(_workload("only-spot", variant_of="ns/job", flavor="spot"))
    admitted = sorted(_admit(engine))
    assert admitted == ["ns/job", "ns/only-spot"]
    assert _flavor(engine, "ns/only-spot") == "reservation"


def test_a_restarted_engine_reading_the_parent_first_keeps_it_and_charges_once() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000}, release_on_eviction=False)
    _family(engine)
    _admit(engine)
    statuses = {key: _status(engine, key) for key in ("ns/job", "ns/job-reservation")}

    restarted = _engine({"reservation": 5000, "spot": 5000}, release_on_eviction=False)
    restarted.add_workload(dataclasses.replace(_workload("job"), status=statuses["ns/job"]))
    restarted.add_workload(
        dataclasses.replace(_workload("job-spot", variant_of="ns/job", flavor="spot"), active=False)
    )
    restarted.add_workload(
        dataclasses.replace(
            _workload("job-reservation", variant_of="ns/job", flavor="reservation"),
            status=statuses["ns/job-reservation"],
        )
    )
    assert _usage(restarted) == {"reservation": 200}
    assert _true(restarted, "ns/job", "Admitted")
    assert not _true(restarted, "ns/job", "Evicted")


def test_a_parent_deactivated_and_reactivated_takes_its_variants_along() -> None:
    engine = _engine({"reservation": 5000, "spot": 5000})
    _family(engine)
    _admit(engine)
    engine.update_workload(dataclasses.replace(_workload("job"), active=False))
    assert not _status(engine, "ns/job-reservation").active
    assert not _status(engine, "ns/job-spot").active
    assert _usage(engine) == {}
    assert not _true(engine, "ns/job", "Admitted")

    engine.update_workload(_workload("job"))
    assert _status(engine, "ns/job-reservation").active
    assert _status(engine, "ns/job-spot").active
    assert "ns/job-reservation" in _admit(engine)
    assert _flavor(engine, "ns/job") == "reservation"
