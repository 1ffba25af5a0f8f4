"""Writing the engine's decisions: one status patch per Workload, guarded by resourceVersion.

A work queue of Workload keys (de-duplicated, one worker per key at a time, retried with
backoff) drives a level-based reconcile: take the newest known version of the Workload,
render the engine's view of its status, and send what differs as one merge patch of the
status subresource that also carries that version's resourceVersion. The apiserver
applies it only if nobody wrote in between, so a decision taken on a stale view can never
land (two hubs, or one hub behind its cache, cannot admit twice):
- Conflict: read the Workload fresh and feed it to the engine, which re-decides (the
  queue comes back to the key if the engine still wants a change);
- NotFound: the Workload is gone; the engine forgets it;
- success: the response becomes the newest known version (so the next write does not
  trip over the hub's own previous one), its transitions are counted, and the Job that
  owns it is reconciled.
Writes run concurrently across keys, bounded by the number of workers (and the client's
rate budget). Nothing is written when the status already says what the engine says.

Decisions come first. A patch that only says (or re-words) why a queued Workload is not
reserved yet - QuotaReserved=False, Pending or Inadmissible - decides nothing, yet a busy
queue produces one per head per attempt. Such notes wait in `PendingNotes` and are
released only while the client's budget has room to spare (a re-worded note at most once
per `PENDING_REFRESH_SECONDS`); a decision made meanwhile replaces the note unwritten.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import structlog

from core.adapters.kueue_manifests import format_time
from core.api.concurrent_admission import parent_name
from core.api.json_types import Json
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.api.workload_conditions import WorkloadReason
from core.engine.model import WorkloadStatus
from core.kube.client import KubeClient, PatchType
from core.kube.errors import Conflict, NotFound
from core.kube.object_meta import name_of, namespace_of, resource_version_of
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.engine_host import EngineHost
from core.manager.field_manager import FIELD_MANAGER
from core.manager.workload_decisions import condition_of, condition_true
from core.manager.workload_feed import WorkloadFeed
from core.manager.workload_status_patch import (
    changed_conditions,
    is_pending_note,
    owned_status,
    status_of,
    status_patch,
)
from core.manager.workload_transitions import WorkloadTransitions
from core.manager.workload_versions import WorkloadVersions

DEFAULT_WORKERS = 8
PENDING_REFRESH_SECONDS = 60.0
"""A Workload's pending note is re-worded on the server at most this often."""
NOTES_INTERVAL_SECONDS = 0.25
SPARE_BUDGET_FRACTION = 0.5
"""Notes are released only while this share of the client's burst is unused."""


class PendingNotes:
    """Workload keys whose only wanted change is a pending note, oldest first."""

    __slots__ = ("_clock", "_waiting", "_written", "released")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._waiting: dict[str, float] = {}  # key -> not before (monotonic seconds)
        self._written: dict[str, float] = {}  # key -> when its last note landed
        self.released: set[str] = set()

    def __len__(self) -> int:
        return len(self._waiting)

    def hold(self, key: str, *, rewording: bool) -> None:
        """Keep `key` back: a first note as soon as budget allows, a re-wording later."""
        if key in self._waiting:
            return
        not_before = self._written.get(key, 0.0) + PENDING_REFRESH_SECONDS if rewording else 0.0
        self._waiting[key] = not_before

    def written(self, key: str) -> None:
        self._written[key] = self._clock()

    def drop(self, key: str) -> None:
        """A decision was written (or the Workload is gone): no note is owed any more."""
        self._waiting.pop(key, None)
        self._written.pop(key, None)
        self.released.discard(key)

    def release(self, limit: int) -> list[str]:
        """Up to `limit` due keys, oldest first; they may be written once each."""
        if limit <= 0 or not self._waiting:
            return []
        now = self._clock()
        due = [key for key, at in self._waiting.items() if at <= now][:limit]
        for key in due:
            del self._waiting[key]
            self.released.add(key)
        return due


def rejected_status(obj: Json, message: str, now: str) -> dict[str, Any]:
    """Conditions of a Workload the engine cannot read: QuotaReserved=False, saying why."""
    status = status_of(obj)
    conditions = [
        dict(c)
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") != Cond.QUOTA_RESERVED
    ]
    current = condition_of(status, Cond.QUOTA_RESERVED) or {}
    # The transition time moves only when the status flips (SetStatusCondition).
    since = current.get("lastTransitionTime") if current.get("status") == "False" else None
    conditions.append(
        {
            "type": Cond.QUOTA_RESERVED.value,
            "status": "False",
            "reason": WorkloadReason.INADMISSIBLE.value,
            "message": message,
            "lastTransitionTime": since or now,
        }
    )
    return {"conditions": conditions}


class WorkloadStatusWriter:
    """Workload keys in, guarded status patches out (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        host: EngineHost,
        feed: WorkloadFeed,
        versions: WorkloadVersions,
        transitions: WorkloadTransitions,
        *,
        workers: int = DEFAULT_WORKERS,
        on_written: Callable[[Json], None] | None = None,
    ) -> None:
        self.client = client
        self.host = host
        self.feed = feed
        self.versions = versions
        self.transitions = transitions
        self.workers = workers
        self.on_written = on_written
        self.queue: WorkQueue[str] = WorkQueue("workload-status")
        self.notes = PendingNotes()
        self.conflicts = 0
        self.log = structlog.get_logger("core.manager.status")
        host.add_listener(self)

    # -- EngineListener ------------------------------------------------------------------
    def workloads_changed(self, keys: Collection[str]) -> None:
        for key in keys:
            self.queue.add(key)

    def queues_touched(self, cluster_queues: Collection[str] | None) -> None:
        return None

    # -- running -------------------------------------------------------------------------
    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.queue.run_workers(self.sync, self.workers))
            group.create_task(self._release_notes())

    async def _release_notes(self) -> None:
        """Hand held notes to the workers while the client's budget has room to spare."""
        limiter = self.client.rate_limiter
        reserve = limiter.burst * SPARE_BUDGET_FRACTION
        while True:
            await asyncio.sleep(NOTES_INTERVAL_SECONDS)
            for key in self.notes.release(int(limiter.available() - reserve)):
                self.queue.add(key)

    def _wanted(self, key: str, obj: Json) -> dict[str, Any] | None:
        status = self.host.engine.workload_status(key)
        if status is not None:
            return owned_status(status)
        message = self.feed.invalid.get(key)
        if message is not None:
            return rejected_status(obj, message, format_time(self.host.engine.clock.now()))
        return None

    async def sync(self, key: str) -> None:
        """Make the Workload's status say what the engine says; idempotent."""
        released = key in self.notes.released
        self.notes.released.discard(key)
        obj = self.versions.current(key)
        if obj is None:
            self.notes.drop(key)
            return
        wanted = self._wanted(key, obj)
        if wanted is None:
            return
        interim = self.host.take_interim(key)
        if interim is not None:
            obj = await self._write_interim(key, obj, interim)
            if obj is None:
                return
        current = status_of(obj)
        patch = status_patch(current, wanted)
        if patch is not None and is_pending_note(current, patch) and not released:
            self.notes.hold(key, rewording=condition_of(current, Cond.QUOTA_RESERVED) is not None)
            return
        if patch is not None:
            written = await self._write_status(key, obj, wanted, patch)
            if written is None:
                return  # lost a race or the Workload is gone: the key comes back if needed
            obj = written
        await self._sync_active(key, obj)

    async def _write_interim(self, key: str, obj: Json, interim: WorkloadStatus) -> Json | None:
        """Write a state the engine passed through (quota released after an eviction) if
        the object still shows the reservation, so the release is observable even when the
        workload is reserved again before its key comes up; the newest version after."""
        if not condition_true(status_of(obj), Cond.QUOTA_RESERVED):
            return obj
        wanted = owned_status(interim)
        patch = status_patch(status_of(obj), wanted)
        if patch is None:
            return obj
        return await self._write_status(key, obj, wanted, patch)

    async def _write_status(
        self, key: str, obj: Json, wanted: dict[str, Any], patch: dict[str, Any]
    ) -> Json | None:
        version = resource_version_of(obj)
        log = self.log.bind(workload=key)
        self.feed.in_flight[key] = wanted
        try:
            written: dict[str, Any] = await self.client.patch(
                kinds.WORKLOADS,
                name_of(obj),
                {"metadata": {"resourceVersion": version}, "status": patch},
                patch_type=PatchType.MERGE,
                namespace=namespace_of(obj),
                subresource="status",
                field_manager=FIELD_MANAGER,
            )
        except Conflict:
            self.conflicts += 1
            log.info("workload.status_conflict", resource_version=version)
            await self._reread(key, obj)
            return None
        except NotFound:
            log.info("workload.gone")
            self.notes.drop(key)
            self.feed.forget(key)
            return None
        finally:
            self.feed.in_flight.pop(key, None)
        if is_pending_note(status_of(obj), patch):
            self.notes.written(key)
        else:
            self.notes.drop(key)
        self.versions.remember(written)
        log.debug(
            "workload.status_written",
            fields=sorted(patch),
            conditions=changed_conditions(status_of(obj), patch),
        )
        self.transitions.record(written, status_of(obj), status_of(written))
        if self.on_written is not None:
            self.on_written(written)
        return written

    async def _reread(self, key: str, obj: Json) -> None:
        try:
            fresh: dict[str, Any] = await self.client.get(
                kinds.WORKLOADS, name_of(obj), namespace=namespace_of(obj)
            )
        except NotFound:
            self.feed.forget(key)
            return
        # The engine takes the fresh version in (and may decide differently on it); the key
        # comes back shortly to write whatever the engine then wants.
        self.feed.observe_fresh(fresh)
        self.queue.add_rate_limited(key)

    async def _sync_active(self, key: str, obj: Json) -> None:
        """A workload the engine deactivated gets `spec.active: false`, as upstream writes;
        a concurrent-admission variant the engine reactivated gets `true` back (no other
        workload is ever reactivated by the engine)."""
        status = self.host.engine.workload_status(key)
        if status is None:
            return
        active = (obj.get("spec") or {}).get("active", True) is not False
        if status.active == active or (status.active and parent_name(obj) is None):
            return
        try:
            written: dict[str, Any] = await self.client.patch(
                kinds.WORKLOADS,
                name_of(obj),
                {
                    "metadata": {"resourceVersion": resource_version_of(obj)},
                    "spec": {"active": status.active},
                },
                patch_type=PatchType.MERGE,
                namespace=namespace_of(obj),
                field_manager=FIELD_MANAGER,
            )
        except Conflict:
            await self._reread(key, obj)
            return
        except NotFound:
            self.feed.forget(key)
            return
        self.versions.remember(written)
