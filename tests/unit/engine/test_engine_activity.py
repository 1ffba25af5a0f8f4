"""ClusterQueue activity as the cycle sees it, the order heads are taken in, and flush reach.

A ClusterQueue's inactive reason is remembered between cycles; these tests change each
input it depends on and check that status and scheduling follow at once.
"""

from __future__ import annotations

import dataclasses

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
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    StopPolicy,
    Workload,
)


def queue(
    name: str,
    *,
    nominal: int = 4000,
    flavor: str = "default",
    cohort: str | None = None,
    stop: StopPolicy = StopPolicy.NONE,
    checks: tuple[str, ...] = (),
) -> ClusterQueue:
    return ClusterQueue(
        name=name,
        cohort=cohort,
        resource_groups=(
            ResourceGroup(
                covered_resources=("cpu",),
                flavors=(
                    FlavorQuotas(
                        name=flavor, resources=(ResourceQuota(name="cpu", nominal=nominal),)
                    ),
                ),
            ),
        ),
        stop_policy=stop,
        admission_checks=tuple(AdmissionCheckRule(name=c) for c in checks),
    )


def engine_with(*cqs: ClusterQueue) -> Engine:
    e = Engine(clock=ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    for cq in cqs:
        e.upsert_cluster_queue(cq)
        e.upsert_local_queue(LocalQueue(namespace="ns", name=cq.name, cluster_queue=cq.name))
    return e


def job(name: str, lq: str, cpu: int = 1000) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name=lq,
        creation_time=0.0,
        pod_sets=(PodSet(count=1, requests={"cpu": cpu}),),
    )


def active_reason(e: Engine, cq: str) -> str:
    status = e.cluster_queue_status(cq)
    assert status is not None
    (cond,) = status.conditions
    assert cond.status == (cond.reason == "Ready")
    return cond.reason


def admitted(e: Engine) -> list[str]:
    return [a.key for a in e.schedule().admitted]


def test_missing_flavor_deactivates_until_it_exists_and_again_once_deleted() -> None:
    e = engine_with(queue("cq", flavor="gpu"))
    e.add_workload(job("a", "cq"))
    e.add_workload(job("b", "cq"))
    assert active_reason(e, "cq") == "FlavorNotFound"
    assert not e.has_queued_work()
    assert e.schedule().heads == 0

    e.upsert_resource_flavor(ResourceFlavor(name="gpu"))
    assert active_reason(e, "cq") == "Ready"
    assert e.has_queued_work()
    assert admitted(e) == ["ns/a"]

    e.delete_resource_flavor("gpu")
    assert active_reason(e, "cq") == "FlavorNotFound"
    assert e.schedule().heads == 0


def test_admission_check_presence_and_activity_are_followed() -> None:
    e = engine_with(queue("cq", checks=("prov",)))
    e.add_workload(job("a", "cq"))
    assert active_reason(e, "cq") == "AdmissionCheckNotFound"
    e.upsert_admission_check(AdmissionCheck(name="prov", active=False))
    assert active_reason(e, "cq") == "AdmissionCheckInactive"
    assert e.schedule().heads == 0
    e.upsert_admission_check(AdmissionCheck(name="prov", active=True))
    assert active_reason(e, "cq") == "Ready"
    assert admitted(e) == ["ns/a"]
    e.delete_admission_check("prov")
    assert active_reason(e, "cq") == "AdmissionCheckNotFound"


def test_stop_policy_and_restart_are_followed() -> None:
    e = engine_with(queue("cq", stop=StopPolicy.HOLD))
    e.add_workload(job("a", "cq"))
    assert active_reason(e, "cq") == "Stopped"
    assert not e.has_queued_work()
    e.upsert_cluster_queue(queue("cq"))
    assert active_reason(e, "cq") == "Ready"
    assert admitted(e) == ["ns/a"]


def test_cohort_cycle_deactivates_its_queues_until_broken() -> None:
    e = engine_with(queue("cq", cohort="left"), queue("other"))
    e.add_workload(job("a", "cq"))
    e.upsert_cohort(Cohort(name="left", parent="right"))
    e.upsert_cohort(Cohort(name="right", parent="left"))
    assert active_reason(e, "cq") == "CohortHasCycle"
    assert active_reason(e, "other") == "Ready"
    assert e.schedule().heads == 0

    e.upsert_cohort(Cohort(name="right"))
    assert active_reason(e, "cq") == "Ready"
    assert admitted(e) == ["ns/a"]


def test_heads_are_taken_in_cluster_queue_name_order() -> None:
    # Created and filled in an order unrelated to the names; equal in every other respect.
    e = engine_with(queue("zeta"), queue("alpha"), queue("mid"))
    for lq in ("mid", "zeta", "alpha"):
        e.add_workload(job(f"from-{lq}", lq))
    result = e.schedule()
    assert result.heads == 3
    assert [a.key for a in result.admitted] == ["ns/from-alpha", "ns/from-mid", "ns/from-zeta"]


def test_a_finish_flushes_parked_workloads_of_its_cohort_tree_only() -> None:
    e = engine_with(
        queue("a", nominal=2000, cohort="one"),
        queue("b", nominal=0, cohort="one"),
        queue("c", nominal=0, cohort="two"),
        queue("d", nominal=2000, cohort="two"),
    )
    e.add_workload(job("fill-a", "a", 2000))
    e.add_workload(job("fill-d", "d", 2000))
    assert admitted(e) == ["ns/fill-a", "ns/fill-d"]
    e.add_workload(job("wait-b", "b", 1000))
    e.add_workload(job("wait-c", "c", 1000))
    assert admitted(e) == []
    assert e.inadmissible_workloads("b") == ["ns/wait-b"]
    assert e.inadmissible_workloads("c") == ["ns/wait-c"]
    assert not e.has_queued_work()

    e.finish("ns/fill-a")
    assert e.inadmissible_workloads("b") == []
    assert e.queued_workloads("b") == ["ns/wait-b"]
    assert e.inadmissible_workloads("c") == ["ns/wait-c"]
    assert admitted(e) == ["ns/wait-b"]


def test_a_queue_moved_to_another_cohort_is_flushed_with_it() -> None:
    e = engine_with(queue("x", nominal=1000), queue("y", nominal=4000, cohort="big"))
    e.add_workload(job("w", "x", 2000))
    assert admitted(e) == []
    assert e.inadmissible_workloads("x") == ["ns/w"]

    e.upsert_cluster_queue(queue("x", nominal=1000, cohort="big"))
    assert e.inadmissible_workloads("x") == []
    assert e.queued_workloads("x") == ["ns/w"]
    assert admitted(e) == ["ns/w"]

    # Parked again in the new tree, a finish anywhere in it wakes the workload.
    e.add_workload(job("fill", "y", 3000))
    assert admitted(e) == ["ns/fill"]
    e.add_workload(job("v", "x", 1000))
    assert admitted(e) == []
    assert e.inadmissible_workloads("x") == ["ns/v"]
    e.finish("ns/fill")
    assert e.queued_workloads("x") == ["ns/v"]
    assert admitted(e) == ["ns/v"]


def test_a_deleted_and_recreated_queue_starts_clean() -> None:
    e = engine_with(queue("cq"), queue("keep"))
    e.add_workload(job("a", "cq"))
    e.delete_cluster_queue("cq")
    assert not e.has_queued_work()
    assert e.schedule().heads == 0
    e.upsert_cluster_queue(queue("cq"))
    assert e.queued_workloads("cq") == ["ns/a"]
    assert admitted(e) == ["ns/a"]


def test_an_admitted_workload_reattached_under_a_cohort_cycle_does_not_hang_the_engine() -> None:
    # Bad input must never stall the engine: usage charged into a looping cohort chain
    # stops where the chain loops, and releasing it later balances out.
    e = engine_with(queue("cq", cohort="a"))
    e.upsert_cohort(Cohort(name="a", parent="b"))
    e.add_workload(job("w", "cq"))
    assert admitted(e) == ["ns/w"]
    e.delete_cluster_queue("cq")
    e.upsert_cohort(Cohort(name="b", parent="a"))
    e.upsert_cluster_queue(queue("cq", cohort="a"))
    assert active_reason(e, "cq") == "CohortHasCycle"
    e.finish("ns/w")
    e.upsert_cohort(Cohort(name="b"))
    assert active_reason(e, "cq") == "Ready"
    usage = e.cluster_queue_usage("cq")
    assert all(value == 0 for value in usage.values())


def test_a_terminating_queue_says_so_keeps_its_counts_and_admits_nothing_more() -> None:
    # Upstream's clusterqueue_controller: a ClusterQueue held by its finalizer while
    # being deleted reports Active=False/Terminating and fresh counters; the scheduler
    # skips it, so what waits there stays pending.
    e = engine_with(queue("cq"))
    e.add_workload(job("holder", "cq"))
    assert admitted(e) == ["ns/holder"]
    e.upsert_cluster_queue(dataclasses.replace(queue("cq"), terminating=True))
    e.add_workload(job("late", "cq"))
    assert admitted(e) == []
    status = e.cluster_queue_status("cq")
    assert status is not None
    (cond,) = status.conditions
    assert (cond.status, cond.reason, cond.message) == (
        False,
        "Terminating",
        "Can't admit new workloads; clusterQueue is terminating",
    )
    assert (status.reserving_workloads, status.admitted_workloads) == (1, 1)
    assert status.pending_workloads == 1
    lq = e.local_queue_status("ns", "cq")
    assert lq is not None and lq.conditions[0].reason == "ClusterQueueIsInactive"
    late = e.workload_status("ns/late")
    assert late is not None
    reserved = late.condition("QuotaReserved")
    assert reserved is not None and not reserved.status


def test_a_cohort_naming_itself_as_parent_is_a_cycle_its_queues_and_status_tell() -> None:
    e = engine_with(queue("cq", cohort="self"), queue("other"))
    e.add_workload(job("a", "cq"))
    e.upsert_cohort(Cohort(name="self", parent="self"))
    assert active_reason(e, "cq") == "CohortHasCycle"
    assert active_reason(e, "other") == "Ready"
    cohort = e.cohort_status("self")
    assert cohort is not None
    (cond,) = cohort.conditions
    assert (cond.type, cond.status, cond.reason, cond.message) == (
        "Active",
        False,
        "CohortHasCycle",
        "Cohort has a cycle: self -> self",
    )
    assert e.schedule().heads == 0

    e.upsert_cohort(Cohort(name="self"))
    assert active_reason(e, "cq") == "Ready"
    cohort = e.cohort_status("self")
    assert cohort is not None and cohort.conditions == ()
    assert admitted(e) == ["ns/a"]


def test_every_cohort_of_a_two_cohort_cycle_reports_the_loop() -> None:
    e = engine_with(queue("cq", cohort="left"))
    e.upsert_cohort(Cohort(name="left", parent="right"))
    e.upsert_cohort(Cohort(name="right", parent="left"))
    messages = {}
    for name in ("left", "right"):
        status = e.cohort_status(name)
        assert status is not None
        messages[name] = [c.message for c in status.conditions]
    assert messages == {
        "left": ["Cohort has a cycle: left -> right -> left"],
        "right": ["Cohort has a cycle: right -> left -> right"],
    }
