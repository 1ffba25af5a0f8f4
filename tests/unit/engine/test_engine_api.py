"""The Engine facade as a driver sees it: change sets, timers, queries."""

from __future__ import annotations

import dataclasses

from core.api.admission_check import CheckState
from core.engine.clock import ManualClock
from core.engine.config import EngineConfig, WaitForPodsReadyConfig
from core.engine.engine import Engine
from core.engine.model import (
    AdmissionCheck,
    AdmissionCheckRule,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)


def engine(config: EngineConfig | None = None, checks: tuple[str, ...] = ()) -> Engine:
    e = Engine(config, ManualClock())
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
    for name in checks:
        e.upsert_admission_check(AdmissionCheck(name=name))
    e.upsert_cluster_queue(
        ClusterQueue(
            name="cq",
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
            admission_checks=tuple(AdmissionCheckRule(name=c) for c in checks),
        )
    )
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    return e


def wl(name: str, cpu: int, created: float = 0.0) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        uid=name,
        queue_name="lq",
        creation_time=created,
        pod_sets=(PodSet(count=1, requests={"cpu": cpu}),),
    )


def test_unchanged_pending_status_is_not_reported_twice() -> None:
    e = engine()
    e.add_workload(wl("big", 3000, 1))
    e.add_workload(wl("small", 2000, 2))
    first = e.schedule()
    assert [a.key for a in first.admitted] == ["ns/big"]
    second = e.schedule()
    assert "ns/small" in second.changed
    assert e.inadmissible_workloads("cq") == ["ns/small"]
    # A namespace change wakes it up; the same verdict again needs no new status patch.
    e.upsert_namespace(Namespace(name="ns", labels={"team": "x"}))
    assert e.queued_workloads("cq") == ["ns/small"]
    again = e.schedule()
    assert again.heads == 1
    assert again.changed == {}
    e.finish("ns/big")
    e.finish("ns/big")  # repeated reports are harmless
    third = e.schedule()
    assert [a.key for a in third.admitted] == ["ns/small"]


def test_lifecycle_calls_return_the_statuses_they_changed() -> None:
    e = engine(checks=("prov",))
    e.add_workload(wl("w", 1000))
    result = e.schedule()
    status = result.changed["ns/w"]
    assert status.admission is not None
    assert status.condition("Admitted") is None
    changes = e.set_admission_check_state("ns/w", "prov", CheckState.READY, "ok")
    admitted = changes["ns/w"].condition("Admitted")
    assert admitted is not None and admitted.status
    assert e.set_pods_ready("ns/w", True)["ns/w"].condition("PodsReady") is not None
    assert e.finish("ns/w")["ns/w"].condition("Finished") is not None


def test_next_timer_drives_a_driver_loop() -> None:
    clock = ManualClock()
    e = Engine(EngineConfig(wait_for_pods_ready=WaitForPodsReadyConfig(timeout_seconds=60)), clock)
    e.upsert_resource_flavor(ResourceFlavor(name="default"))
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
    e.upsert_local_queue(LocalQueue(namespace="ns", name="lq", cluster_queue="cq"))
    e.add_workload(wl("w", 1000))
    assert e.has_queued_work()
    e.schedule()
    assert not e.has_queued_work()
    deadline = e.next_timer()
    assert deadline == 60
    clock.set(deadline)
    changes = e.tick()
    evicted = changes["ns/w"].condition("Evicted")
    assert evicted is not None and evicted.reason == "PodsReadyTimeout"
    assert e.next_timer() == 120  # backoff ends 60 s after the eviction
    clock.set(120)
    e.tick()
    assert e.has_queued_work()
    assert [a.key for a in e.schedule().admitted] == ["ns/w"]


def test_status_queries() -> None:
    e = engine()
    e.add_workload(wl("a", 4000, 1))
    e.add_workload(wl("b", 1000, 2))
    e.schedule()
    cq = e.cluster_queue_status("cq")
    assert cq is not None
    assert (cq.pending_workloads, cq.reserving_workloads, cq.admitted_workloads) == (1, 1, 1)
    assert cq.flavors_reservation[0].total == 4000
    lq = e.local_queue_status("ns", "lq")
    assert lq is not None and lq.pending_workloads == 1
    assert [p.name for p in e.pending_workloads_in_local_queue("ns", "lq")] == ["b"]
    assert e.workload_cluster_queue("ns/a") == "cq"
    assert e.cluster_queue_usage("cq") == {("default", "cpu"): 4000}
    assert e.cluster_queue_names() == ["cq"] and e.local_queue_keys() == ["ns/lq"]


def test_a_held_workload_gives_its_quota_back_and_waits_until_released() -> None:
    e = engine()
    e.add_workload(wl("serving", 3000, 1))
    e.add_workload(wl("next", 2000, 2))
    assert [a.key for a in e.schedule().admitted] == ["ns/serving"]
    e.schedule()
    assert e.inadmissible_workloads("cq") == ["ns/next"]
    held = e.hold("ns/serving", "scaled to zero")["ns/serving"]
    reserved = held.condition("QuotaReserved")
    assert reserved is not None and not reserved.status and reserved.reason == "OnHold"
    assert held.admission is None
    assert [a.key for a in e.schedule().admitted] == ["ns/next"], "its quota went to next"
    assert e.queued_workloads("cq") == [] and e.hold("ns/serving", "again") == {}
    released = e.release_hold("ns/serving")["ns/serving"].condition("QuotaReserved")
    assert released is not None and released.reason == "Pending"
    assert e.queued_workloads("cq") == ["ns/serving"]
    e.finish("ns/next")
    assert [a.key for a in e.schedule().admitted] == ["ns/serving"]


def test_a_workload_held_before_a_restart_stays_held() -> None:
    e = engine()
    e.add_workload(wl("serving", 3000))
    e.schedule()
    status = e.hold("ns/serving", "scaled to zero")["ns/serving"]
    restarted = engine()
    restarted.add_workload(dataclasses.replace(wl("serving", 3000), status=status))
    assert restarted.queued_workloads("cq") == []
    assert restarted.schedule().admitted == []


def test_quota_and_cohort_figures_for_metrics() -> None:
    e = engine()
    cq = dataclasses.replace(
        ClusterQueue(
            name="team-cq",
            resource_groups=(
                ResourceGroup(
                    covered_resources=("cpu",),
                    flavors=(
                        FlavorQuotas(
                            name="default",
                            resources=(
                                ResourceQuota(name="cpu", nominal=2000, borrowing_limit=1000),
                            ),
                        ),
                    ),
                ),
            ),
        ),
        cohort="team",
    )
    e.upsert_cluster_queue(cq)
    e.upsert_local_queue(LocalQueue(namespace="ns", name="team-lq", cluster_queue="team-cq"))
    e.add_workload(dataclasses.replace(wl("a", 1500, 1), queue_name="team-lq"))
    e.schedule()
    quotas = e.cluster_queue_quotas("team-cq")
    assert quotas[("default", "cpu")].nominal == 2000
    assert quotas[("default", "cpu")].borrowing_limit == 1000
    figures = e.cohort_figures("team")
    assert figures is not None
    assert figures.subtree_quota[("default", "cpu")] == 2000
    assert figures.reservations == {("default", "cpu"): 1500}
    assert figures.admitted_workloads == 1
    assert e.cohort_figures("nobody") is None


def test_a_group_waiting_for_replacement_pods_keeps_its_quota_and_is_not_queued() -> None:
    e = engine()
    e.add_workload(wl("group", 3000))
    e.schedule()
    waiting = e.set_waiting_for_replacement_pods("ns/group", True)["ns/group"]
    cond = waiting.condition("WaitingForReplacementPods")
    assert cond is not None and cond.status and cond.reason == "PodsFailed"
    assert cond.message == "Some Failed pods need replacement"
    assert waiting.admission is not None, "an admitted group keeps its quota"
    assert e.set_waiting_for_replacement_pods("ns/group", True) == {}, "nothing changes twice"

    e.evict("ns/group", "Preempted", "Preempted to accommodate a workload")
    released = e.set_waiting_for_replacement_pods("ns/group", True)["ns/group"]
    cond = released.condition("WaitingForReplacementPods")
    assert cond is not None and cond.reason == "Preempted", "it says why, while evicted"
    assert released.admission is None
    assert e.queued_workloads("cq") == [], "not queued while Pods are missing"
    assert e.schedule().admitted == []

    back = e.set_waiting_for_replacement_pods("ns/group", False)["ns/group"]
    cond = back.condition("WaitingForReplacementPods")
    assert cond is not None and not cond.status and cond.reason == "PodsReady"
    assert e.queued_workloads("cq") == ["ns/group"]
    assert [a.key for a in e.schedule().admitted] == ["ns/group"]
    assert e.set_waiting_for_replacement_pods("ns/group", False) == {}


def test_a_workload_never_waiting_gets_no_condition() -> None:
    e = engine()
    e.add_workload(wl("solo", 1000))
    assert e.set_waiting_for_replacement_pods("ns/solo", False) == {}


def test_cohort_figures_end_for_cohorts_in_a_cycle() -> None:
    e = engine()
    e.upsert_cohort(Cohort(name="left", parent="right"))
    e.upsert_cohort(Cohort(name="right", parent="left"))
    e.upsert_cluster_queue(dataclasses.replace(ClusterQueue(name="looped"), cohort="left"))
    for name in ("left", "right"):
        figures = e.cohort_figures(name)
        assert figures is not None, "the metrics of a looped cohort are still reported"
        assert figures.admitted_workloads == 0
