"""Who gets a copy: AllAtOnce, Incremental, External and capacity-aware, decision by decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pytest

from core.engine.dispatch.capacity_snapshot import CapacitySnapshot, FlavorSnapshot, QueueSnapshot
from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.model import ResourceFlavor
from core.engine.quantity import to_base_units
from hub.multikueue.dispatch.capacity_dispatcher import CapacityAwareDispatcher
from hub.multikueue.dispatch.capacity_view import QueueLookup
from hub.multikueue.dispatch.dispatchers import (
    AllAtOnceDispatcher,
    DispatchRequest,
    ExternalDispatcher,
    IncrementalDispatcher,
    WorkerChoice,
)

from .builders import NOW, local_workload

KEY = "ns/job-a-1234"


def request(
    *workers: WorkerChoice, nominated: tuple[str, ...] = (), now: float = NOW, gpus: int = 0
) -> DispatchRequest:
    return DispatchRequest(
        key=KEY, local=local_workload(gpus=gpus), workers=workers, nominated=nominated, now=now
    )


def up(name: str, copy: bool = False) -> WorkerChoice:
    return WorkerChoice(name, True, copy)


def down(name: str) -> WorkerChoice:
    return WorkerChoice(name, False, False)


async def test_all_at_once_nominates_every_connected_worker_in_config_order() -> None:
    nomination = await AllAtOnceDispatcher().nominate(request(up("w2"), down("w1"), up("w3")))
    assert nomination.names == ("w2", "w3") and nomination.write


async def test_incremental_adds_step_size_workers_per_round_whatever_their_state() -> None:
    dispatcher = IncrementalDispatcher(step_size=2, round_seconds=300)
    workers = (up("w1"), down("w2"), up("w3"), up("w4"), up("w5"))
    first = await dispatcher.nominate(request(*workers))
    assert first.names == ("w1", "w2") and first.recheck_after == 300
    during = await dispatcher.nominate(request(*workers, nominated=first.names, now=NOW + 100))
    assert during.names == ("w1", "w2") and during.recheck_after == pytest.approx(200)
    second = await dispatcher.nominate(request(*workers, nominated=first.names, now=NOW + 300))
    assert second.names == ("w1", "w2", "w3", "w4")
    third = await dispatcher.nominate(request(*workers, nominated=second.names, now=NOW + 600))
    assert third.names == ("w1", "w2", "w3", "w4", "w5")
    last = await dispatcher.nominate(request(*workers, nominated=third.names, now=NOW + 900))
    assert last.names == third.names and last.recheck_after is None


async def test_incremental_after_a_restart_starts_a_fresh_round_without_adding() -> None:
    restarted = IncrementalDispatcher(step_size=3, round_seconds=300)
    workers = tuple(up(f"w{i}") for i in range(1, 6))
    resumed = await restarted.nominate(request(*workers, nominated=("w1", "w2", "w3")))
    assert resumed.names == ("w1", "w2", "w3") and resumed.recheck_after == 300


async def test_external_follows_what_someone_else_nominated_and_never_writes() -> None:
    nomination = await ExternalDispatcher("example.com/mine").nominate(
        request(up("w1"), up("w2"), nominated=("w2", "gone"))
    )
    assert nomination.names == ("w2",) and not nomination.write


# -- capacity-aware ---------------------------------------------------------------------


def report(cluster: str, *, free_gpus: int, observed: float = NOW) -> CapacitySnapshot:
    gpu = "nvidia.com/gpu"
    block = {"cpu": to_base_units("cpu", "32"), gpu: free_gpus}
    return CapacitySnapshot(
        cluster_name=cluster,
        observed_at=observed,
        flavors={"gpu": FlavorSnapshot(name="gpu", node_count=1, free=block, blocks=(block,))},
        cluster_queues={
            "cq": QueueSnapshot(
                name="cq",
                quota=(("gpu", {"cpu": to_base_units("cpu", "64"), gpu: 16}),),
            )
        },
    )


@dataclass
class Reports:
    """What the hub would read from each worker: its report and its LocalQueue's target."""

    snapshots: dict[str, CapacitySnapshot] = field(default_factory=dict)
    queues: dict[str, str] = field(default_factory=dict)
    flavors: dict[str, dict[str, ResourceFlavor]] | None = None
    """Per worker, its ResourceFlavors; None: they cannot be read."""

    def snapshot(self, cluster: str) -> CapacitySnapshot | None:
        return self.snapshots.get(cluster)

    async def cluster_queue(self, cluster: str, namespace: str, local_queue: str) -> QueueLookup:
        assert (namespace, local_queue) == ("ns", "lq")
        return QueueLookup(known=True, cluster_queue=self.queues.get(cluster))

    async def flavor_specs(
        self, cluster: str, names: tuple[str, ...]
    ) -> Mapping[str, ResourceFlavor] | None:
        if self.flavors is None:
            return None
        known = self.flavors.get(cluster, {})
        return {name: known[name] for name in names if name in known}


async def test_capacity_aware_nominates_only_the_worker_whose_report_fits() -> None:
    reports = Reports(
        {"w1": report("w1", free_gpus=2), "w2": report("w2", free_gpus=8)}, {"w1": "cq", "w2": "cq"}
    )
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await dispatcher.nominate(request(up("w1"), up("w2"), gpus=8))
    assert nomination.names == ("w2",)
    assert nomination.recheck_after == pytest.approx(60)


async def test_without_any_readable_report_it_races_on_every_connected_worker() -> None:
    dispatcher = CapacityAwareDispatcher(Reports(), timeout_seconds=60)
    first = await dispatcher.nominate(request(up("w1"), down("w2"), up("w3"), gpus=8))
    assert first.names == ("w1", "w3") and first.recheck_after is None
    again = await dispatcher.nominate(
        request(up("w1", copy=True), up("w2"), up("w3", copy=True), nominated=first.names, gpus=8)
    )
    assert again.names == ("w1", "w2", "w3")  # w2 is back: it races too
    assert dispatcher.in_flight.claimed_worker(KEY) is None


async def test_once_a_report_is_readable_a_racing_workload_narrows_to_one_worker() -> None:
    reports = Reports()
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    raced = await dispatcher.nominate(request(up("w1"), up("w2"), gpus=8))
    assert raced.names == ("w1", "w2")
    reports.snapshots["w2"], reports.queues["w2"] = report("w2", free_gpus=8), "cq"
    narrowed = await dispatcher.nominate(
        request(up("w1", copy=True), up("w2", copy=True), nominated=raced.names, gpus=8)
    )
    assert narrowed.names == ("w2",)  # judged afresh: the worker whose report fits


async def test_when_no_report_says_it_fits_it_tries_one_worker_at_a_time_in_config_order() -> None:
    full = Reports(
        {"w1": report("w1", free_gpus=2), "w2": report("w2", free_gpus=2)}, {"w1": "cq", "w2": "cq"}
    )
    dispatcher = CapacityAwareDispatcher(full, timeout_seconds=60)
    first = await dispatcher.nominate(request(up("w1"), up("w2"), gpus=8))
    assert first.names == ("w1",)
    waiting = await dispatcher.nominate(
        request(up("w1", copy=True), up("w2"), nominated=("w1",), now=NOW + 30, gpus=8)
    )
    assert waiting.names == ("w1",) and waiting.recheck_after == pytest.approx(30)
    # Time is up while w1 still holds its copy: withdraw, nominate nobody yet.
    withdrawing = await dispatcher.nominate(
        request(up("w1", copy=True), up("w2"), nominated=("w1",), now=NOW + 60, gpus=8)
    )
    assert withdrawing.names == ()
    # The copy is gone: now w2.
    moved = await dispatcher.nominate(request(up("w1"), up("w2"), now=NOW + 61, gpus=8))
    assert moved.names == ("w2",)


async def test_a_stale_report_counts_as_no_report() -> None:
    reports = Reports({"w2": report("w2", free_gpus=8, observed=NOW - 3600)}, {"w2": "cq"})
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await dispatcher.nominate(request(up("w1"), up("w2"), gpus=8))
    assert nomination.names == ("w1",)


async def test_a_worker_without_the_local_queue_is_tried_last() -> None:
    reports = Reports({"w1": report("w1", free_gpus=8)}, {})
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await dispatcher.nominate(request(up("w1"), up("w2"), gpus=8))
    assert nomination.names == ("w2",)  # w2 unknown (no report) beats w1 (no LocalQueue)


async def test_after_a_restart_the_nominee_keeps_its_turn_with_a_fresh_timer() -> None:
    reports = Reports({"w2": report("w2", free_gpus=8)}, {"w2": "cq"})
    restarted = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await restarted.nominate(
        request(up("w1", copy=True), up("w2"), nominated=("w1",), gpus=8)
    )
    assert nomination.names == ("w1",) and nomination.recheck_after == pytest.approx(60)


async def test_a_disconnected_nominee_is_replaced_without_waiting() -> None:
    reports = Reports({"w2": report("w2", free_gpus=8)}, {"w2": "cq"})
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await dispatcher.nominate(request(down("w1"), up("w2"), nominated=("w1",), gpus=8))
    assert nomination.names == ("w2",)


async def test_a_flavor_whose_nodes_the_pods_do_not_select_does_not_fit() -> None:
    """Both reports have room, but w1's flavor is the GPU pool and the pods ask for CPU nodes."""
    local = local_workload(gpus=0)
    template = local["spec"]["podSets"][0]["template"]
    template["spec"]["nodeSelector"] = {"pool": "cpu"}
    reports = Reports(
        {"w1": report("w1", free_gpus=8), "w2": report("w2", free_gpus=8)},
        {"w1": "cq", "w2": "cq"},
        flavors={
            "w1": {"gpu": ResourceFlavor(name="gpu", node_labels={"pool": "gpu"})},
            "w2": {"gpu": ResourceFlavor(name="gpu", node_labels={"pool": "cpu"})},
        },
    )
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60)
    nomination = await dispatcher.nominate(
        DispatchRequest(key=KEY, local=local, workers=(up("w1"), up("w2")), nominated=(), now=NOW)
    )
    assert nomination.names == ("w2",)


def stream_request(index: int, *workers: WorkerChoice, gpus: int) -> DispatchRequest:
    return DispatchRequest(
        key=f"ns/job-{index}",
        local=local_workload(gpus=gpus),
        workers=workers,
        nominated=(),
        now=NOW + 1,
    )


async def test_a_stream_between_two_reports_is_shared_not_piled_on_the_first_worker() -> None:
    roomy = {"cpu": to_base_units("cpu", "64"), "nvidia.com/gpu": 16}
    wide = FlavorSnapshot(name="gpu", node_count=1, free=roomy, blocks=(roomy,))
    reports = Reports(
        {w: replace(report(w, free_gpus=16), flavors={"gpu": wide}) for w in ("w1", "w2")},
        {"w1": "cq", "w2": "cq"},
    )
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60, wall_clock=lambda: NOW + 1)
    workers = (up("w1"), up("w2"))
    names = [
        (await dispatcher.nominate(stream_request(i, *workers, gpus=2))).names for i in range(8)
    ]
    assert names == [("w1",), ("w2",)] * 4
    # Both ClusterQueues are now full in the hub's eyes, though neither report shows it.
    ninth = await dispatcher.nominate(stream_request(8, *workers, gpus=2))
    assert ninth.names == ("w1",)  # tried in turn, not as a fit
    # A finished dispatch keeps its claim until a report taken after it arrives.
    dispatcher.forget("ns/job-0")
    assert dispatcher.in_flight.loads({"w1": NOW}, NOW + 1)["w1"].claims == 5
    assert dispatcher.in_flight.loads({"w1": NOW + 2}, NOW + 2)["w1"].claims == 4


async def test_config_order_policy_sends_the_stream_to_the_first_worker_while_it_fits() -> None:
    reports = Reports({w: report(w, free_gpus=16) for w in ("w1", "w2")}, {"w1": "cq", "w2": "cq"})
    dispatcher = CapacityAwareDispatcher(
        reports, timeout_seconds=60, policy=PlacementPolicy.CONFIG_ORDER
    )
    workers = (up("w1"), up("w2"))
    names = [
        (await dispatcher.nominate(stream_request(i, *workers, gpus=4))).names for i in range(6)
    ]
    assert names == [("w1",)] * 4 + [("w2",)] * 2


async def test_a_guessed_nomination_moves_once_a_report_shows_room_elsewhere() -> None:
    reports = Reports(
        {"w1": report("w1", free_gpus=2), "w2": report("w2", free_gpus=2)}, {"w1": "cq", "w2": "cq"}
    )
    clock = [NOW]
    dispatcher = CapacityAwareDispatcher(reports, timeout_seconds=60, wall_clock=lambda: clock[0])
    workers = (up("w1", copy=True), up("w2"))
    first = await dispatcher.nominate(request(*workers, gpus=8))
    assert first.names == ("w1",)  # nobody fits: tried in turn
    assert dispatcher.capacity_sensitive() == []  # just judged
    clock[0] = NOW + 3
    assert dispatcher.capacity_sensitive() == [KEY]
    reports.snapshots["w2"] = report("w2", free_gpus=8, observed=NOW + 3)
    moving = await dispatcher.nominate(request(*workers, nominated=("w1",), now=NOW + 3, gpus=8))
    assert moving.names == ()  # withdrawing w1's copy first
    moved = await dispatcher.nominate(
        request(up("w1"), up("w2"), nominated=(), now=NOW + 4, gpus=8)
    )
    assert moved.names == ("w2",)
    assert dispatcher.capacity_sensitive() == []  # a fit, not a guess
