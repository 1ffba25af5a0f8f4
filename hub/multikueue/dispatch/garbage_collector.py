"""Garbage collection of remote copies whose manager Workload is gone or going.

Removal normally happens in the reconciler's pass for the deleted Workload, but only on
workers connected at that moment; a worker that was away, or a hub that crashed between
a delete and its pass, leaves copies behind. Every `interval_seconds` (upstream's
gcInterval; 0 turns it off), and at once when a worker (re)connects — where leftovers
are most likely — this walks each connected worker's origin-filtered caches:
a copy whose manager Workload is missing or terminating loses its job (every Pod of a pod
group), then itself; an origin-labelled job naming such a Workload (its prebuilt-workload
label) goes too, and a copy standing for several Workloads (a LeaderWorkerSet's) once all
of them are gone.

Safe by construction: it runs only after the manager's Workload cache has synced (an
empty cache would make everything look orphaned), it only sees objects carrying our
origin label, and every delete is preconditioned on the object's UID (`RemoteWrites`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from core.kube.errors import KubeError
from core.kube.object_meta import make_key, namespace_of, object_key
from core.kube.object_store import ObjectStore
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.connections.worker_events import WorkerConnected, WorkerEvent
from hub.multikueue.dispatch.remote_writes import WORKLOAD_KIND, RemoteWrites
from hub.multikueue.dispatch.workload_facts import Json, is_deleting, metadata
from integrations.framework.job_kind import JobKind
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL
from integrations.framework.multikueue_kinds import names_remote_workloads
from integrations.framework.registry import FrameworkRegistry


@dataclass(frozen=True, slots=True)
class CollectionReport:
    workloads: int = 0
    jobs: int = 0
    failures: int = 0


def prebuilt_workload_key(job: Json) -> str | None:
    meta = metadata(job)
    name = (meta.get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) or (
        meta.get("annotations") or {}
    ).get(PREBUILT_WORKLOAD_LABEL)
    return make_key(namespace_of(job), str(name)) if name else None


class GarbageCollector:
    def __init__(
        self,
        registry: WorkerRegistry,
        workloads: ObjectStore[dict[str, Any]],
        writes: RemoteWrites,
        *,
        kinds: FrameworkRegistry,
        interval_seconds: float,
        busy: Callable[[str], bool] = lambda _key: False,
    ) -> None:
        self.registry = registry
        self.kinds = kinds
        """The enabled job kinds: their origin-labelled remote jobs are collected too."""
        self.workloads = workloads
        self.writes = writes
        self.interval_seconds = interval_seconds
        self.busy = busy
        """Keys the reconciler is removing itself right now (left to it)."""
        self.log = structlog.get_logger("hub.multikueue.dispatch").bind(component="gc")
        self._worker_returned = asyncio.Event()

    def on_worker_event(self, event: WorkerEvent) -> None:
        """Registry listener: a worker whose caches just synced may hold leftovers."""
        if isinstance(event, WorkerConnected):
            self._worker_returned.set()

    def orphaned(self, key: str | None) -> bool:
        if key is None:
            return False
        local = self.workloads.get(key)
        return local is None or is_deleting(local)

    async def run(self) -> None:
        if self.interval_seconds <= 0:
            return
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval_seconds):
                    await self._worker_returned.wait()
            self._worker_returned.clear()
            report = await self.collect()
            if report.workloads or report.jobs or report.failures:
                self.log.info(
                    "multikueue.gc",
                    workloads=report.workloads,
                    jobs=report.jobs,
                    failures=report.failures,
                )

    def _workload_keys(self, kind: JobKind, job: Json) -> list[str]:
        """The Workloads a remote job is ours for: the one its prebuilt name gives, or those
        the kind says a copy stands for (`NamesRemoteWorkloads`, a LeaderWorkerSet)."""
        stands_for = names_remote_workloads(kind)
        if stands_for is not None:
            namespace = namespace_of(job)
            return [make_key(namespace, name) for name in stands_for.remote_workload_names(job)]
        key = prebuilt_workload_key(job)
        return [] if key is None else [key]

    async def collect(self) -> CollectionReport:
        removed_workloads = removed_jobs = failures = 0
        for connection in self.registry.connections():
            client, caches = connection.client, connection.caches
            if client is None or caches is None:
                continue
            # Our jobs by the Workloads they are ours for; a job goes once every one of
            # them is orphaned (a pod group's Pods go with their one Workload).
            job_list = [
                (kind.resource, job, self._workload_keys(kind, job))
                for kind in self.kinds
                if (jobs := caches.jobs.get(kind.framework)) is not None
                for job in jobs.store.list()
            ]
            handled: set[tuple[str, str]] = set()
            for remote in caches.workloads.store.list():
                key = object_key(remote)
                if not self.orphaned(key) or self.busy(key):
                    continue
                if self.writes.pending.view(connection.name, WORKLOAD_KIND, key, remote) is None:
                    continue  # deleted already; the cache has not caught up
                mine = [
                    (resource, job)
                    for resource, job, keys in job_list
                    if key in keys and all(self.orphaned(k) for k in keys)
                ]
                try:
                    for resource, job in mine:
                        await self.writes.remove(
                            client,
                            connection.name,
                            key,
                            workload=None,
                            jobs=(job,),
                            job_resource=resource,
                        )
                        handled.add((resource.kind, object_key(job)))
                    await self.writes.remove(
                        client,
                        connection.name,
                        key,
                        workload=remote,
                        jobs=(),
                        job_resource=None,
                    )
                except KubeError as error:
                    failures += 1
                    self.log.warning(
                        "multikueue.gc_failed",
                        cluster=connection.name,
                        workload=key,
                        error=str(error),
                    )
                    continue
                self.writes.forget(key)
                removed_workloads += 1
                removed_jobs += len(mine)
            for resource, job, keys in job_list:
                if (
                    not keys
                    or (resource.kind, object_key(job)) in handled
                    or not all(self.orphaned(k) for k in keys)
                ):
                    continue
                if any(caches.workloads.store.get(k) is not None for k in keys):
                    continue  # a copy is still there: removed together next round
                try:
                    await self.writes.remove(
                        client,
                        connection.name,
                        keys[0],
                        workload=None,
                        jobs=(job,),
                        job_resource=resource,
                    )
                except KubeError as error:
                    failures += 1
                    self.log.warning(
                        "multikueue.gc_failed",
                        cluster=connection.name,
                        job=object_key(job),
                        error=str(error),
                    )
                    continue
                for k in keys:
                    self.writes.forget(k)
                removed_jobs += 1
        return CollectionReport(removed_workloads, removed_jobs, failures)
