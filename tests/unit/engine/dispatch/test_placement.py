"""Capacity-aware placement over the dev fleet's shape: who gets the workload, and why not."""

from __future__ import annotations

from typing import Any

from core.engine.dispatch.fit_cache import FitCache
from core.engine.dispatch.fit_verdict import FitReason, FitVerdict
from core.engine.dispatch.in_flight import InFlightLedger
from core.engine.dispatch.placement import (
    PlacementDecision,
    PlacementMode,
    WorkerCandidate,
    decide_placement,
    try_order,
)
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.model import PodSet

Fleet = dict[str, Any]
GPU = "nvidia.com/gpu"
GiB = 1024**3


def gpu_pods(count: int = 1, gpus: int = 8, cpu: int = 16) -> tuple[PodSet, ...]:
    return (
        PodSet(
            name="main", count=count, requests={GPU: gpus, "cpu": cpu * 1000, "memory": 64 * GiB}
        ),
    )


def cpu_pods(count: int = 1, cpu: int = 8, **hints: Any) -> tuple[PodSet, ...]:
    return (
        PodSet(name="main", count=count, requests={"cpu": cpu * 1000, "memory": 16 * GiB}, **hints),
    )


def candidates(fleet: Fleet, **kw: Any) -> list[WorkerCandidate]:
    return [fleet["worker-1"].candidate(**kw), fleet["worker-2"].candidate(**kw)]


def test_idle_fleet_spreads_to_the_worker_left_with_the_larger_free_share(
    fleet: Fleet, now: float
) -> None:
    decision = decide_placement(gpu_pods(), candidates(fleet), now=now)
    assert decision.mode is PlacementMode.CAPACITY_AWARE
    # worker-1 has 32 GPUs, worker-2 16: 8 of them leave 75 % free there, 50 % here.
    assert decision.chosen == "worker-1"
    assert [f.verdict for f in decision.fits] == [FitVerdict.FITS, FitVerdict.FITS]
    assert decision.fits[0].flavors == ({"cpu": "h100", "memory": "h100", GPU: "h100"},)
    assert decision.usage["worker-1"]["h100"][GPU] == 8
    reversed_config = list(reversed(candidates(fleet)))
    assert decide_placement(gpu_pods(), reversed_config, now=now).chosen == "worker-1"
    packed = decide_placement(gpu_pods(), candidates(fleet), now=now, policy=PlacementPolicy.PACK)
    assert packed.chosen == "worker-2"
    in_order = decide_placement(
        gpu_pods(), reversed_config, now=now, policy=PlacementPolicy.CONFIG_ORDER
    )
    assert in_order.chosen == "worker-2"


def test_claims_in_flight_count_as_reserved_quota(fleet: Fleet, now: float) -> None:
    ledger = InFlightLedger()
    observed = {"worker-1": now - 1.0, "worker-2": now - 1.0}
    picks = []
    for index in range(6):
        key = f"team-a/job-{index}"
        decision = decide_placement(
            gpu_pods(), candidates(fleet), now=now, loads=ledger.loads(observed, now)
        )
        chosen = decision.chosen
        assert chosen is not None
        ledger.claim(key, chosen, "team-a", decision.usage[chosen])
        picks.append(chosen)
    # 8 GPUs each: worker-1 (32) keeps 75 % free, then both keep 50 % and the tie goes to
    # the worker with fewer claims in flight, worker-2 (16); and so on until both are full.
    assert picks == ["worker-1", "worker-2", "worker-1", "worker-1", "worker-2", "worker-1"]
    full = decide_placement(
        gpu_pods(), candidates(fleet), now=now, loads=ledger.loads(observed, now)
    )
    assert full.mode is PlacementMode.INCREMENTAL
    assert {f.reason for f in full.fits} == {FitReason.INSUFFICIENT_UNUSED_QUOTA}


def test_a_settled_claim_counts_until_a_later_report(fleet: Fleet, now: float) -> None:
    ledger = InFlightLedger()
    ledger.claim("team-a/big", "worker-2", "team-a", {"a100": {GPU: 16}})
    before = {"worker-1": now - 5.0, "worker-2": now - 5.0}
    ledger.settle("team-a/big", now - 2.0)
    assert ledger.loads(before, now)["worker-2"].usage == {"team-a": {"a100": {GPU: 16}}}
    assert ledger.loads(before, now, excluding="team-a/big") == {}
    after = {"worker-1": now, "worker-2": now - 1.0}
    assert ledger.loads(after, now) == {}
    assert len(ledger) == 0


def test_an_8_gpu_pod_goes_where_one_node_has_8_free_not_where_8_are_spread(
    fleet: Fleet, now: float
) -> None:
    worker1 = fleet["worker-1"]
    for index in range(4):
        worker1.occupy(f"worker-1-gpu-{index}", gpu="6", cpu="8")
    worker2 = fleet["worker-2"]
    worker2.occupy("worker-2-gpu-0", gpu="8", cpu="8")
    # worker-1 has 8 GPUs free in total, 2 per node; worker-2 has one node with all 8.
    assert worker1.snapshot().flavors["h100"].free[GPU] == 8
    decision = decide_placement(gpu_pods(), candidates(fleet), now=now)
    first, second = decision.fits
    assert first.verdict is FitVerdict.DOES_NOT_FIT
    assert first.reason is FitReason.INSUFFICIENT_NODE_CAPACITY
    assert "no node in flavor h100 has room" in first.message
    assert "0 of 1 pods placed" in first.message
    assert second.verdict is FitVerdict.FITS
    assert decision.chosen == "worker-2"


def test_a_multi_pod_job_needs_a_node_for_every_pod(fleet: Fleet, now: float) -> None:
    four = decide_placement(gpu_pods(count=4), candidates(fleet), now=now)
    assert four.chosen == "worker-1"
    # A daemon pod takes one GPU on one node: quota still covers 32 GPUs, nodes do not.
    fleet["worker-1"].occupy("worker-1-gpu-3", gpu="1")
    again = decide_placement(gpu_pods(count=4), candidates(fleet), now=now)
    assert [f.reason for f in again.fits] == [
        FitReason.INSUFFICIENT_NODE_CAPACITY,
        FitReason.EXCEEDS_NOMINAL_QUOTA,
    ]
    assert "3 of 4 pods placed" in again.fits[0].message
    assert again.fits[1].message == (
        "ClusterQueue team-a: pod set main: nvidia.com/gpu in flavor a100: 32 needed,"
        " nominal quota is 16; nvidia.com/gpu in flavor cpu: 32 needed, nominal quota is 0"
    )
    assert again.mode is PlacementMode.INCREMENTAL


def test_small_pods_pack_onto_partly_used_nodes(fleet: Fleet, now: float) -> None:
    worker1 = fleet["worker-1"]
    for index in range(4):
        worker1.occupy(f"worker-1-gpu-{index}", gpu="6", cpu="8")
    # Four 2-GPU pods fit, one per node; a fifth does not.
    assert decide_placement(gpu_pods(4, gpus=2), candidates(fleet), now=now).fits[0].verdict is (
        FitVerdict.FITS
    )
    fifth = decide_placement(gpu_pods(5, gpus=2), [worker1.candidate()], now=now)
    assert fifth.fits[0].reason is FitReason.INSUFFICIENT_NODE_CAPACITY


def test_a_cpu_job_goes_to_the_cpu_worker(fleet: Fleet, now: float) -> None:
    job = cpu_pods(count=6, cpu=16, node_selector={"fleetq.dev/node-pool": "cpu"})
    decision = decide_placement(job, candidates(fleet), now=now)
    first, second = decision.fits
    assert first.reason is FitReason.NO_ELIGIBLE_FLAVOR
    assert first.message.endswith("flavor h100 doesn't match node affinity")
    assert second.verdict is FitVerdict.FITS
    assert second.flavors == ({"cpu": "cpu", "memory": "cpu"},)
    assert decision.chosen == "worker-2"


def test_a_gpu_flavor_tainted_for_gpu_jobs_only_sends_cpu_jobs_elsewhere(
    fleet: Fleet, now: float
) -> None:
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    for worker in fleet.values():
        worker.taint_gpu_nodes(taint)
    decision = decide_placement(cpu_pods(), candidates(fleet), now=now)
    assert decision.fits[0].message.endswith(
        "untolerated taint nvidia.com/gpu=present:NoSchedule in flavor h100"
    )
    assert decision.chosen == "worker-2"
    assert decision.fits[1].flavors == ({"cpu": "cpu", "memory": "cpu"},)
    # The GPU nodes still count for their flavor: it declares the taint.
    assert fleet["worker-1"].snapshot().flavors["h100"].node_count == 4


def test_exhausted_quota_does_not_fit_and_says_how_much_is_missing(
    fleet: Fleet, now: float
) -> None:
    fleet["worker-1"].reserve("h100", gpu="28", cpu="64", memory="256Gi")
    decision = decide_placement(gpu_pods(), candidates(fleet), now=now)
    first = decision.fits[0]
    assert first.verdict is FitVerdict.DOES_NOT_FIT
    assert first.reason is FitReason.INSUFFICIENT_UNUSED_QUOTA
    assert first.message == (
        "ClusterQueue team-a: pod set main: insufficient unused quota for nvidia.com/gpu"
        " in flavor h100, 4 more needed"
    )
    assert decision.chosen == "worker-2"


def test_quota_is_counted_across_pod_sets_of_one_workload(fleet: Fleet, now: float) -> None:
    pod_sets = (
        PodSet(name="driver", count=1, requests={GPU: 8, "cpu": 1000}),
        PodSet(name="workers", count=1, requests={GPU: 8, "cpu": 1000}),
    )
    worker2 = fleet["worker-2"]
    worker2.reserve("a100", gpu="8")
    fit = decide_placement(pod_sets, [worker2.candidate()], now=now).fits[0]
    assert fit.reason is FitReason.INSUFFICIENT_UNUSED_QUOTA
    assert fit.message.startswith("ClusterQueue team-a: pod set workers:")


def test_a_resource_the_queue_does_not_cover_never_fits(fleet: Fleet, now: float) -> None:
    job = (PodSet(name="main", requests={"cpu": 1000, "example.com/fpga": 1}),)
    fit = decide_placement(job, [fleet["worker-1"].candidate()], now=now).fits[0]
    assert fit.reason is FitReason.RESOURCE_UNAVAILABLE
    assert "resource example.com/fpga unavailable in ClusterQueue team-a" in fit.message


def test_a_stale_report_is_unknown_and_leads_to_fallback_with_it_first(
    fleet: Fleet, now: float
) -> None:
    worker2 = fleet["worker-2"]
    worker2.reserve("a100", gpu="16")
    stale = fleet["worker-1"].candidate(age=600)
    decision = decide_placement(gpu_pods(), [worker2.candidate(), stale], now=now)
    assert decision.fits[1].verdict is FitVerdict.UNKNOWN
    assert decision.fits[1].reason is FitReason.STALE_REPORT
    assert "600s old" in decision.fits[1].message
    assert decision.mode is PlacementMode.INCREMENTAL
    assert decision.chosen is None
    assert decision.order == ("worker-1", "worker-2")


def test_a_missing_report_or_local_queue_is_told_apart(fleet: Fleet, now: float) -> None:
    silent = WorkerCandidate(name="worker-3", snapshot=None, cluster_queue="team-a")
    no_queue = WorkerCandidate(
        name="worker-1", snapshot=fleet["worker-1"].snapshot(), cluster_queue=None
    )
    other_queue = WorkerCandidate(
        name="worker-2", snapshot=fleet["worker-2"].snapshot(), cluster_queue="team-b"
    )
    decision = decide_placement(gpu_pods(), [no_queue, other_queue, silent], now=now)
    assert [(f.verdict, f.reason) for f in decision.fits] == [
        (FitVerdict.DOES_NOT_FIT, FitReason.NO_LOCAL_QUEUE),
        (FitVerdict.DOES_NOT_FIT, FitReason.NO_CLUSTER_QUEUE),
        (FitVerdict.UNKNOWN, FitReason.NO_REPORT),
    ]
    assert decision.order == ("worker-3", "worker-1", "worker-2")


def test_when_every_fresh_report_says_no_it_still_falls_back(fleet: Fleet, now: float) -> None:
    fleet["worker-1"].reserve("h100", gpu="32")
    for index in range(2):
        fleet["worker-2"].occupy(f"worker-2-gpu-{index}", gpu="8")
    decision = decide_placement(gpu_pods(), candidates(fleet), now=now)
    assert all(f.verdict is FitVerdict.DOES_NOT_FIT for f in decision.fits)
    assert decision.mode is PlacementMode.INCREMENTAL
    # Both are "not for now" (quota in use, nodes in use): config order is kept.
    assert decision.order == ("worker-1", "worker-2")


def test_fallback_tries_not_for_now_before_not_as_configured() -> None:
    from core.engine.dispatch.fit_verdict import WorkerFit

    fits = [
        WorkerFit(worker="a", verdict=FitVerdict.DOES_NOT_FIT, reason=FitReason.NO_LOCAL_QUEUE),
        WorkerFit(
            worker="b",
            verdict=FitVerdict.DOES_NOT_FIT,
            reason=FitReason.INSUFFICIENT_UNUSED_QUOTA,
        ),
        WorkerFit(worker="c", verdict=FitVerdict.UNKNOWN, reason=FitReason.STALE_REPORT),
        WorkerFit(worker="d", verdict=FitVerdict.FITS),
    ]
    assert try_order(fits) == ("d", "c", "b", "a")


def test_without_flavor_definitions_the_report_alone_decides(fleet: Fleet, now: float) -> None:
    job = cpu_pods(node_selector={"fleetq.dev/node-pool": "cpu"})
    decision = decide_placement(job, candidates(fleet, with_specs=False), now=now)
    # Labels unknown: worker-1's flavor is taken as eligible, and its nodes have room.
    assert decision.chosen == "worker-1"


def test_decisions_are_deterministic(fleet: Fleet, now: float) -> None:
    fleet["worker-1"].occupy("worker-1-gpu-2", gpu="4")
    first = decide_placement(gpu_pods(3), candidates(fleet), now=now)
    again = decide_placement(gpu_pods(3), candidates(fleet), now=now)
    assert first == again
    duplicated = [*candidates(fleet), fleet["worker-1"].candidate(age=900)]
    assert decide_placement(gpu_pods(3), duplicated, now=now) == first


def test_cached_verdicts_follow_new_claims_and_new_reports(fleet: Fleet, now: float) -> None:
    cache = FitCache()
    ledger = InFlightLedger()
    workers = candidates(fleet)
    observed = {"worker-1": now, "worker-2": now}

    def decide() -> PlacementDecision:
        loads = ledger.loads(observed, now)
        return decide_placement(gpu_pods(count=2), workers, now=now, loads=loads, cache=cache)

    first = decide()
    assert (first.chosen, cache.hits, cache.misses) == ("worker-1", 0, 2)
    assert decide().chosen == "worker-1" and cache.hits == 2
    ledger.claim("team-a/a", "worker-1", "team-a", first.usage["worker-1"], first.pods["worker-1"])
    second = decide()
    # worker-1's claims changed (judged again), worker-2's did not (reused).
    assert cache.hits == 3 and cache.misses == 3
    assert second.chosen == "worker-2"  # 16 of 32 left there, 0 of 16 here after: 50 % > 0 %
    fleet["worker-2"].occupy("worker-2-gpu-0", gpu="8")
    workers = candidates(fleet)  # a new report from each worker
    third = decide()
    assert cache.misses == 5
    assert third.verdict("worker-2") is not None
    assert third.verdict("worker-2").verdict is FitVerdict.DOES_NOT_FIT
