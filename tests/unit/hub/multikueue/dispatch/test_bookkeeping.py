"""Small rules the dispatch relies on: our own writes, report choice, status replacement."""

from __future__ import annotations

from core.api.codec import decode
from core.api.worker_capacity import WorkerCapacity
from hub.multikueue.dispatch.capacity_view import pick_report
from hub.multikueue.dispatch.job_sync import status_replacement
from hub.multikueue.dispatch.pending_writes import PendingWrites


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def obj(uid: str) -> dict[str, object]:
    return {"metadata": {"name": "w", "namespace": "ns", "uid": uid}}


def test_a_copy_we_created_counts_as_there_until_the_cache_has_it() -> None:
    clock = Clock()
    pending = PendingWrites(ttl_seconds=30, monotonic=clock)
    pending.created("w1", "Workload", "ns/w", obj("a"))
    assert pending.view("w1", "Workload", "ns/w", None) == obj("a")
    assert pending.view("w2", "Workload", "ns/w", None) is None  # another worker
    assert pending.view("w1", "Workload", "ns/w", obj("a")) == obj("a")
    assert len(pending) == 0  # the cache caught up: forgotten


def test_a_copy_we_deleted_counts_as_gone_unless_a_new_one_took_its_name() -> None:
    clock = Clock()
    pending = PendingWrites(ttl_seconds=30, monotonic=clock)
    pending.deleted("w1", "Workload", "ns/w", "a")
    assert pending.view("w1", "Workload", "ns/w", obj("a")) is None
    assert pending.view("w1", "Workload", "ns/w", obj("b")) == obj("b")
    pending.deleted("w1", "Workload", "ns/w", "b")
    clock.now = 31
    assert pending.view("w1", "Workload", "ns/w", obj("b")) == obj("b")  # memory expired


def report(name: str, cluster: str) -> WorkerCapacity:
    return decode(WorkerCapacity, {"metadata": {"name": name}, "spec": {"clusterName": cluster}})


def test_the_report_naming_the_worker_is_used_and_a_lone_report_is_trusted() -> None:
    mine, other = report("r1", "w1"), report("r2", "w2")
    assert pick_report([other, mine], "w1") is mine
    assert pick_report([other], "w1") is other
    assert pick_report([other, report("r3", "w3")], "w1") is None
    assert pick_report([], "w1") is None


def test_a_copied_status_removes_keys_the_remote_no_longer_has() -> None:
    current = {"active": 1, "ready": 1, "startTime": "t0"}
    wanted = {"succeeded": 1, "startTime": "t0"}
    assert status_replacement(current, wanted) == {
        "active": None,
        "ready": None,
        "succeeded": 1,
        "startTime": "t0",
    }
