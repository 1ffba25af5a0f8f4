"""The hub's one Engine, and the single door every change to it goes through.

The engine is synchronous and pure, so it is driven directly from the event loop: no
threads and no locks, and an engine call never awaits. Whatever changes the engine
(an informer event, a scheduling cycle, a job that stopped) goes through this host,
which tells its listeners which workloads' statuses changed and which ClusterQueues they
touched, and wakes the scheduler loop. Listeners only note keys (the status writer and
the queue-status writer queue them); they never call back into the engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

import structlog

from core.api.admission_check import CheckState
from core.api.workload_conditions import WorkloadReason
from core.engine.clock import Clock, WallClock
from core.engine.engine import Engine, EngineConfig, StatusChanges
from core.engine.model import WorkloadStatus


class EngineListener(Protocol):
    """Told about changes; must be quick and must not call the engine back."""

    def workloads_changed(self, keys: Collection[str]) -> None: ...

    def queues_touched(self, cluster_queues: Collection[str] | None) -> None:
        """`None` means every queue (a cluster object changed)."""


class EngineHost:
    """Owns the Engine; publishes what each call changed (see module docstring)."""

    def __init__(self, config: EngineConfig, *, clock: Clock | None = None) -> None:
        self.engine = Engine(config, clock or WallClock())
        self.log = structlog.get_logger("core.manager.engine")
        self._listeners: list[EngineListener] = []
        self._wake = asyncio.Event()
        # Statuses a workload passed through that must be written even if the engine has
        # moved on before its key comes up (quota released after an eviction completed).
        self._interim: dict[str, WorkloadStatus] = {}

    # -- plumbing ------------------------------------------------------------------------
    def add_listener(self, listener: EngineListener) -> None:
        self._listeners.append(listener)

    def wake(self) -> None:
        """Something that may allow an admission happened: run a scheduling cycle soon."""
        self._wake.set()

    async def wait_for_change(self, timeout_seconds: float | None) -> bool:
        """Wait until woken (True) or the timeout passes (False); clears the signal."""
        try:
            if timeout_seconds is None:
                await self._wake.wait()
            else:
                async with asyncio.timeout(max(0.0, timeout_seconds)):
                    await self._wake.wait()
        except TimeoutError:
            return False
        finally:
            self._wake.clear()
        return True

    def consume_wake(self) -> None:
        """Forget wake-ups so far: the caller is about to look at the engine as it is."""
        self._wake.clear()

    def publish(
        self,
        changes: Mapping[str, object] | Iterable[str],
        *,
        touched: Iterable[str] = (),
        wake: bool = True,
    ) -> None:
        """Tell listeners which workloads changed and which ClusterQueues that touched."""
        keys = list(changes)
        queues = {cq for cq in touched if cq}
        for key in keys:
            cq = self.engine.workload_cluster_queue(key)
            if cq:
                queues.add(cq)
        if keys:
            for listener in self._listeners:
                listener.workloads_changed(keys)
        if queues:
            for listener in self._listeners:
                listener.queues_touched(queues)
        if wake:
            self.wake()

    def cluster_objects_changed(self) -> None:
        """A queue, flavor, cohort, check, class or namespace changed."""
        for listener in self._listeners:
            listener.queues_touched(None)
        self.wake()

    # -- lifecycle calls a controller makes on a workload it observed --------------------
    def knows(self, key: str) -> bool:
        return self.engine.workload_status(key) is not None

    def finish(
        self, key: str, *, succeeded: bool, message: str, reason: WorkloadReason | None = None
    ) -> None:
        """Finish the workload; `reason` overrides Succeeded/Failed (e.g. FailedToStart)."""
        if self.knows(key):
            self._publish_call(key, self.engine.finish(key, succeeded, message, reason))

    def complete_eviction(self, key: str) -> None:
        """Release the quota of an evicted workload and requeue it.

        The released state (QuotaReserved=False, Requeued) is kept as an interim status:
        a cycle may reserve quota again before the status writer gets to the key, and
        upstream writes the release before the new reservation.
        """
        if self.knows(key):
            changes = self.engine.complete_eviction(key)
            released = changes.get(key)
            if released is not None and released.admission is None:
                self._interim[key] = released
            self._publish_call(key, changes)

    def evict(self, key: str, reason: WorkloadReason, message: str) -> None:
        """Evict an admitted workload (a controller's decision, e.g. failed TAS nodes)."""
        if self.knows(key):
            self._publish_call(key, self.engine.evict(key, reason, message))

    def replace_failed_node(self, key: str, node: str) -> None:
        """Move a TAS workload's pods off a failed node, or evict it (`Engine`)."""
        if self.knows(key):
            self._publish_call(key, self.engine.replace_failed_node(key, node))

    def hold(self, key: str, message: str) -> None:
        """Release the quota of a workload its owner holds (`Engine.hold`)."""
        if self.knows(key):
            self._publish_call(key, self.engine.hold(key, message))

    def release_hold(self, key: str) -> None:
        if self.knows(key):
            self._publish_call(key, self.engine.release_hold(key))

    def take_interim(self, key: str) -> WorkloadStatus | None:
        """The interim status owed for `key`, once (see `complete_eviction`)."""
        return self._interim.pop(key, None)

    def set_pods_ready(self, key: str, ready: bool) -> None:
        if self.knows(key):
            self._publish_call(key, self.engine.set_pods_ready(key, ready), wake=False)

    def set_waiting_for_replacement_pods(self, key: str, waiting: bool) -> None:
        """A pod group misses Pods, or has them all again (`Engine`'s rule)."""
        if self.knows(key):
            self._publish_call(key, self.engine.set_waiting_for_replacement_pods(key, waiting))

    def set_reclaimable_pods(self, key: str, reclaimable: Mapping[str, int]) -> None:
        if self.knows(key):
            self._publish_call(key, self.engine.set_reclaimable_pods(key, reclaimable))

    def set_admission_check_state(
        self, key: str, check: str, state: CheckState, message: str = ""
    ) -> None:
        if self.knows(key):
            self._publish_call(
                key, self.engine.set_admission_check_state(key, check, state, message)
            )

    def _publish_call(self, key: str, changes: StatusChanges, *, wake: bool = True) -> None:
        # The workload's CQ is looked up after the call: a finish releases quota there.
        self.publish(changes, touched=(self.engine.workload_cluster_queue(key) or "",), wake=wake)
