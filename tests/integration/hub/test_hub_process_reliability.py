"""Reliability of `fleetq hub` as a real process: killed with SIGKILL in the middle of a
500-Workload stream it loses nothing and admits nothing twice once restarted; of two
replicas sharing a Lease exactly one leads, and the other takes over within the lease
duration when the leader is killed.

The stream is driven as upstream's performance runner drives it: Workloads created
directly (no job) at a steady rate onto a small quota, each marked Finished a moment
after it is admitted. A watch on the Workloads records every version the apiserver
serves, so double admissions and over-admission are seen even when they are brief.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.kube.informer import EventHandlers, Informer
from core.kube.resources import LEASES
from core.manager import watched_kinds as kinds

pytestmark = pytest.mark.asyncio(loop_scope="session")

STREAM = 500
QUOTA = 16
CREATE_PER_SECOND = 50.0
RUN_SECONDS = 0.25
KILL_AFTER_FINISHED = 150
DOWN_SECONDS = 1.0
LEASE_SECONDS = 4.0
TAKEOVER_MARGIN_SECONDS = 2.5


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "clientConnection": {"qps": 200, "burst": 400},
        **extra,
    }


def _cpu(quantity: Any) -> float:
    text = str(quantity or "0")
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _total(status: dict[str, Any], field_name: str) -> float:
    return sum(
        _cpu(resource.get("total"))
        for flavor in status.get(
            "flavorsReservation" if field_name == "reserved" else "flavorsUsage"
        )
        or ()
        for resource in flavor.get("resources") or ()
    )


@dataclass
class Lifetime:
    """What the watch saw of one Workload (by UID)."""

    name: str
    admissions: int = 0
    """Times status.admission went from unset to set."""
    finishes: int = 0
    """Times the Finished condition turned True."""
    has_admission: bool = False
    finished: bool = False


@dataclass
class StreamObserver:
    """Watches the stream's Workloads and ClusterQueue; plays the runner's finishing part."""

    cluster: Any
    cluster_queue: str
    lifetimes: dict[str, Lifetime] = field(default_factory=dict)
    holding: set[str] = field(default_factory=set)
    most_holding: int = 0
    snapshot_errors: list[str] = field(default_factory=list)
    busy_snapshots: int = 0
    """CQ statuses written while workloads held quota (the ones worth checking)."""
    last_status: dict[str, Any] = field(default_factory=dict)
    finishing: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        client = self.cluster.client
        self.workloads: Informer[dict[str, Any]] = Informer(
            client, kinds.WORKLOADS, into=dict, namespace=self.cluster.namespace
        )
        self.workloads.add_handlers(
            EventHandlers(on_add=self._workload, on_update=lambda _, new: self._workload(new))
        )
        self.queues: Informer[dict[str, Any]] = Informer(
            client,
            kinds.CLUSTER_QUEUES,
            into=dict,
            field_selector=f"metadata.name={self.cluster_queue}",
        )
        self.queues.add_handlers(
            EventHandlers(on_add=self._queue, on_update=lambda _, new: self._queue(new))
        )

    @property
    def finished(self) -> int:
        return sum(1 for life in self.lifetimes.values() if life.finished)

    def _workload(self, obj: dict[str, Any]) -> None:
        meta, status = obj["metadata"], obj.get("status") or {}
        uid, name = meta["uid"], meta["name"]
        life = self.lifetimes.setdefault(uid, Lifetime(name))
        has_admission = bool(status.get("admission"))
        finished = self.cluster.is_true(obj, "Finished")
        if has_admission and not life.has_admission:
            life.admissions += 1
        if finished and not life.finished:
            life.finishes += 1
        life.has_admission, life.finished = has_admission, finished
        if has_admission and not finished:
            self.holding.add(uid)
        else:
            self.holding.discard(uid)
        self.most_holding = max(self.most_holding, len(self.holding))
        if self.cluster.is_true(obj, "Admitted") and not finished and name not in self.finishing:
            self.finishing[name] = asyncio.create_task(self._finish_later(obj))

    async def _finish_later(self, admitted: dict[str, Any]) -> None:
        await asyncio.sleep(RUN_SECONDS)
        await self.cluster.finish_workload(admitted["metadata"]["name"], seen=admitted)

    def _queue(self, obj: dict[str, Any]) -> None:
        status = obj.get("status") or {}
        if not status:
            return
        self.last_status = status
        reserving = status.get("reservingWorkloads", 0)
        if reserving > 0:
            self.busy_snapshots += 1
        admitted = status.get("admittedWorkloads", 0)
        reserved, used = _total(status, "reserved"), _total(status, "used")
        version = obj["metadata"]["resourceVersion"]
        if reserved != reserving or used != admitted or reserving > QUOTA:
            self.snapshot_errors.append(
                f"rv {version}: reserving {reserving} workloads for {reserved} CPU, "
                f"admitted {admitted} for {used} CPU (quota {QUOTA}, 1 CPU each)"
            )

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.workloads.run())
            group.create_task(self.queues.run())

    async def finish_errors(self) -> list[BaseException]:
        done = await asyncio.gather(*self.finishing.values(), return_exceptions=True)
        return [result for result in done if isinstance(result, BaseException)]


async def _create_stream(cluster: Any, queue: str, created: dict[str, str]) -> None:
    started = time.monotonic()
    for index in range(STREAM):
        delay = started + index / CREATE_PER_SECOND - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        workload = await cluster.workload(f"w-{index:03d}", queue)
        created[workload["metadata"]["name"]] = workload["metadata"]["uid"]


async def test_a_hub_killed_mid_stream_loses_nothing_and_admits_nothing_twice(
    hub_processes: Any, cluster: Any
) -> None:
    hub = await hub_processes.start("stream-hub", _config(leaderElection={"leaderElect": False}))
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("stream", flavor, str(QUOTA))
    lq = await cluster.local_queue("main", cq)
    observer = StreamObserver(cluster, cq)
    watching = asyncio.create_task(observer.run())
    created: dict[str, str] = {}
    creating = asyncio.create_task(_create_stream(cluster, lq, created))
    try:
        await observer.workloads.wait_synced(30)

        async def enough_finished() -> bool:
            if creating.done():
                creating.result()
            return observer.finished >= KILL_AFTER_FINISHED

        await cluster.eventually(enough_finished, timeout=60, what=f"{KILL_AFTER_FINISHED} done")
        hub.kill()
        at_kill = (len(created), observer.finished, len(observer.holding))
        await asyncio.sleep(DOWN_SECONDS)  # the stream goes on without a hub for a moment
        hub.start()
        await hub.wait_ready()

        async def all_finished() -> bool:
            if creating.done():
                creating.result()
            return len(created) == STREAM and observer.finished == STREAM

        await cluster.eventually(all_finished, timeout=120, what="every workload finished")
        await creating

        async def queue_drained() -> dict[str, Any] | None:
            status = observer.last_status
            drained = status.get("reservingWorkloads", 0) == 0 and _total(status, "used") == 0
            return status if drained and status.get("pendingWorkloads", 0) == 0 else None

        await cluster.eventually(queue_drained, what="CQ status back to empty")
    finally:
        creating.cancel()
        watching.cancel()
        await asyncio.gather(creating, watching, return_exceptions=True)

    assert at_kill[0] < STREAM and at_kill[1] < STREAM, f"killed mid-stream: {at_kill}"
    assert len(hub.log_events("hub.leading")) == 2, "the hub led before the kill and after"
    assert not await observer.finish_errors()
    by_name = {life.name: uid for uid, life in observer.lifetimes.items()}
    assert by_name == created, "every created Workload, none replaced, no stranger"
    twice = {
        life.name: life.admissions for life in observer.lifetimes.values() if life.admissions != 1
    }
    assert not twice, f"admitted other than exactly once: {twice}"
    assert all(life.finishes == 1 for life in observer.lifetimes.values())
    assert observer.most_holding <= QUOTA, f"{observer.most_holding} held quota at once"
    assert observer.busy_snapshots >= 3, "the CQ status was written along the way"
    assert not observer.snapshot_errors, "\n".join(observer.snapshot_errors[:10])


async def _holder(cluster: Any, lease: str) -> str:
    found = await cluster.get(LEASES, lease) or {}
    return str((found.get("spec") or {}).get("holderIdentity") or "")


async def _admitted(cluster: Any, name: str) -> dict[str, Any] | None:
    workload = await cluster.get(kinds.WORKLOADS, name)
    return workload if workload is not None and cluster.is_true(workload, "Admitted") else None


async def test_of_two_hub_processes_one_leads_and_the_other_takes_over_when_it_is_killed(
    hub_processes: Any, cluster: Any
) -> None:
    lease = cluster.name("fleetq-hub")
    config = _config(
        leaderElection={
            "leaderElect": True,
            "leaseDuration": f"{LEASE_SECONDS:g}s",
            "renewDeadline": "3s",
            "retryPeriod": "500ms",
            "resourceName": lease,
            "resourceNamespace": cluster.namespace,
        }
    )
    replicas = {
        identity: await hub_processes.start(identity, config) for identity in ("hub-a", "hub-b")
    }
    holder = await cluster.eventually(lambda: _holder(cluster, lease), what="a leader")
    assert holder in replicas
    leader = replicas[holder]
    follower = next(hub for identity, hub in replicas.items() if identity != holder)

    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("ha", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("first", lq)
    await cluster.eventually(lambda: _admitted(cluster, "first"), what="first admitted")
    assert len(leader.log_events("hub.leading")) == 1
    assert not follower.log_events("hub.leading"), "only one replica leads"
    assert await _holder(cluster, lease) == holder

    leader.kill()
    killed_at = time.monotonic()

    async def taken_over() -> bool:
        return await _holder(cluster, lease) == follower.identity

    await cluster.eventually(taken_over, timeout=3 * LEASE_SECONDS, what="takeover")
    took = time.monotonic() - killed_at
    assert took <= LEASE_SECONDS + TAKEOVER_MARGIN_SECONDS, f"takeover after {took:.1f}s"
    assert follower.running
    await cluster.workload("second", lq)
    second = await cluster.eventually(lambda: _admitted(cluster, "second"), what="second admitted")
    assert second["status"]["admission"]["clusterQueue"] == cq
    assert len(follower.log_events("hub.leading")) == 1
    first = await cluster.get(kinds.WORKLOADS, "first")
    assert cluster.is_true(first, "Admitted"), "the first admission survives the takeover"
