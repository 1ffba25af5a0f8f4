"""The group-Workload controller: a Workload per wanted group of a job whose Pods are
queued as pod groups (`integrations.framework.group_workloads.PrebuildsGroupWorkloads`,
upstream's LeaderWorkerSet reconciler).

One runs per such kind, instead of the job controller: the job itself is never suspended
or started. A reconcile of a job reads it, the Workloads it controls and its Pods from the
caches, and writes only the difference:
- a job gone or being deleted: its Workloads are deleted (their finalizer dropped first),
  so the groups' quota is released at once;
- a wanted group without a Workload gets one (built as for any job from the kind's pod
  sets, then named and marked by the kind), unless the kind says the job's Workloads come
  from elsewhere (a MultiKueue worker's copy); a Workload of a group no longer wanted
  (scaled down) is deleted; one whose queue name or WorkloadPriorityClass differs from
  the job's follows it; one of a held group (a StatefulSet scaled to zero) is put on hold
  in the engine (quota released, QuotaReserved=False `OnHold`), and taken off hold once
  the group is wanted again;
- each of the job's Pods gets the marks that make it a member of its group's pod group
  (the kind's `marked_pod`), with a patch guarded by its resourceVersion.
The Pod integration then admits each group all together through the prebuilt Workload.
Reconciles are idempotent; a write planned on a stale version fails with Conflict and the
job is planned again shortly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from core.api.codec import decode
from core.api.json_types import Json
from core.api.workload import Workload
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.api.workload_conditions import WorkloadReason
from core.kube.errors import Conflict, NotFound
from core.kube.informer import EventHandlers
from core.kube.object_meta import make_key, name_of, namespace_of, object_key
from core.kube.object_store import ObjectStore
from core.kube.workqueue import WorkQueue
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason
from core.manager.finalizers import is_deleting
from core.manager.job_actions import JobActions
from core.manager.job_controller import (
    DEFAULT_WORKERS,
    owner_index_name,
    priority_class_change,
    workload_owner_index,
)
from core.manager.workload_decisions import condition_of
from core.manager.workload_versions import WorkloadVersions
from integrations.framework import job_metadata
from integrations.framework.group_workloads import GroupWorkloadName, PrebuildsGroupWorkloads
from integrations.framework.job_kind import JobKind, JobResource
from integrations.framework.json_patch import diff
from integrations.framework.labels import POD_SUSPENDING_PARENT_ANNOTATION
from integrations.framework.priority import MissingPriorityClass, PodPriorityClass, PriorityClasses
from integrations.framework.workload_builder import WorkloadBuildOptions, build_workload

Store = ObjectStore[dict[str, Any]]
HOLD_MESSAGE = "StatefulSet scaled to zero; workload on hold"


def _on_hold(workload: Json) -> bool:
    reserved = condition_of(workload.get("status") or {}, Cond.QUOTA_RESERVED) or {}
    return reserved.get("status") == "False" and reserved.get("reason") == WorkloadReason.ON_HOLD


class GroupKind(JobKind, PrebuildsGroupWorkloads, Protocol):
    """A job kind that prebuilds its groups' Workloads."""


def pod_index_name(kind: JobKind) -> str:
    """The Pod cache's index from a job of `kind` to the Pods it made."""
    return f"pods-of:{kind.framework}"


class GroupWorkloadController:
    """Keeps the group Workloads and Pod marks of one kind's jobs (see module docstring)."""

    def __init__(
        self,
        kind: GroupKind,
        actions: JobActions,
        pod_actions: JobActions,
        versions: WorkloadVersions,
        host: EngineHost,
        *,
        jobs: Store,
        workloads: Store,
        pods: Store,
        pod_priority_classes: Store,
        workload_priority_values: Mapping[str, int],
        build: WorkloadBuildOptions | None = None,
    ) -> None:
        self.kind = kind
        self.actions = actions
        self.pod_actions = pod_actions
        self.versions = versions
        self.host = host
        self.jobs = jobs
        self.workloads = workloads
        self.pods = pods
        self.pod_priority_classes = pod_priority_classes
        self.workload_priority_values = workload_priority_values
        self.build = build or WorkloadBuildOptions()
        self.queue: WorkQueue[str] = WorkQueue(kind.resource.plural)
        self.log = structlog.get_logger("core.manager.groups").bind(kind=kind.framework)
        self._owner_index = owner_index_name(kind)
        self._owner_index_of = workload_owner_index(kind)
        self._pod_index = pod_index_name(kind)
        pods.add_indexer(self._pod_index, self._job_of_pod)

    # -- triggers ------------------------------------------------------------------------
    def _job_of_pod(self, pod: Json) -> Iterable[str]:
        meta = pod.get("metadata") or {}
        if (meta.get("annotations") or {}).get(POD_SUSPENDING_PARENT_ANNOTATION) != (
            self.kind.framework
        ):
            return ()
        name = self.kind.pod_job_name(pod)
        return (make_key(namespace_of(pod), str(name)),) if name else ()

    def job_handlers(self) -> EventHandlers[dict[str, Any]]:
        def enqueue(obj: Json) -> None:
            self.queue.add(object_key(obj))

        return EventHandlers(
            on_add=enqueue, on_update=lambda _old, new: enqueue(new), on_delete=enqueue
        )

    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(
            on_add=self.workload_changed,
            on_update=lambda _old, new: self.workload_changed(new),
            on_delete=self.workload_changed,
        )

    def workload_changed(self, workload: Json) -> None:
        for key in self._owner_index_of(workload):
            self.queue.add(key)

    def referenced_handlers(self, resource: JobResource) -> EventHandlers[dict[str, Any]]:
        """Its Pods: a Pod's arrival or change reconciles the job that made it."""

        def changed(pod: Json) -> None:
            for key in self._job_of_pod(pod):
                self.queue.add(key)

        return EventHandlers(on_add=changed, on_update=lambda _old, new: changed(new))

    async def run(self, workers: int = DEFAULT_WORKERS) -> None:
        for job in self.jobs:
            self.queue.add(object_key(job))
        await self.queue.run_workers(self._reconcile_or_retry, workers)

    async def _reconcile_or_retry(self, key: str) -> None:
        try:
            await self.reconcile(key)
        except Conflict:
            self.log.debug("group.conflict", job=key)
            self.queue.add_rate_limited(key)

    # -- reconcile -----------------------------------------------------------------------
    def _owned(self, key: str) -> list[Json]:
        return [
            self.versions.current(object_key(cached)) or cached
            for cached in self.workloads.by_index(self._owner_index, key)
        ]

    def _priority_classes(self) -> PriorityClasses:
        pod_classes = {
            str((pc.get("metadata") or {}).get("name")): PodPriorityClass(
                value=int(pc.get("value") or 0), global_default=bool(pc.get("globalDefault"))
            )
            for pc in self.pod_priority_classes
        }
        return PriorityClasses(
            workload_classes=dict(self.workload_priority_values), pod_classes=pod_classes
        )

    async def reconcile(self, key: str) -> None:
        job = self.jobs.get(key)
        owned = self._owned(key)
        if job is None or is_deleting(job):
            for workload in owned:
                self.log.info("group.delete_workload", job=key, workload=name_of(workload))
                await self.actions.delete_workload(None, workload)
            return
        kind = self.kind
        wanted = kind.wanted_group_workloads(job)
        wanted_names = {group.name for group in wanted}
        existing = {name_of(w): w for w in owned if not is_deleting(w)}
        for workload in owned:
            if name_of(workload) not in wanted_names:
                self.log.info("group.delete_workload", job=key, workload=name_of(workload))
                await self.actions.delete_workload(job, workload)
        queue = job_metadata.queue_name(job)
        for group in wanted:
            current = existing.get(group.name)
            if current is not None and group.held:
                self.host.hold(object_key(current), HOLD_MESSAGE)
                continue
            if current is not None:
                if _on_hold(current):
                    self.host.release_hold(object_key(current))
                await self._update(job, current, queue)
                continue
            if (
                group.held
                or group.name in {name_of(w) for w in owned}
                or not kind.creates_group_workloads(job)
            ):
                continue  # being deleted (it comes back once gone), or not ours to create
            await self._create(job, group)
        await self._mark_pods(job, key)

    async def _update(self, job: Json, workload: Json, queue: str) -> None:
        """The job's queue name and WorkloadPriorityClass, carried to a group's Workload."""
        if (workload.get("spec") or {}).get("queueName") != queue:
            await self.actions.set_workload_queue(workload, queue)
            return  # the next version comes back through the informer
        change = priority_class_change(
            job, decode(Workload, workload), self.workload_priority_values
        )
        if change is not None:
            await self.actions.set_workload_priority(workload, *change)

    async def _create(self, job: Json, group: GroupWorkloadName) -> None:
        kind = self.kind
        try:
            built = build_workload(kind, job, self._priority_classes(), self.build)
        except MissingPriorityClass as error:
            self.actions.warn(job, EventReason.ERROR_CREATING_WORKLOAD, str(error))
            raise
        workload = kind.group_workload(built, job, group)
        self.log.info(
            "group.create_workload", job=object_key(job), workload=group.name, index=group.index
        )
        await self.actions.create_workload(job, workload)

    async def _mark_pods(self, job: Json, key: str) -> None:
        for pod in self.pods.by_index(self._pod_index, key):
            marked = self.kind.marked_pod(job, pod)
            if marked is None:
                continue
            ops = diff(pod, marked)
            if not ops:
                continue
            try:
                await self.pod_actions.patch_job(pod, ops)
            except NotFound:
                continue  # gone meanwhile (scaled down, recreated)
