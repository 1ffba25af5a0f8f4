"""The generic job controller: a Workload per queued job, and the job run as it decides.

One `JobController` runs per enabled job kind (`integrations.framework.JobKind`), with the
kind's cache and work queue; everything kind-specific is asked of the kind. For every job
the manager manages (it names a LocalQueue in `kueue.x-k8s.io/queue-name`, or
manageJobsWithoutQueueName is on and its namespace is selected; never one whose controller
owner is a kind queued as a whole, like a JobSet's Jobs) a reconcile reads the job and
the Workloads it controls from the caches and does the one next thing, upstream's job
reconciler order:
- no Workload: create it (owner-referenced, built by `framework.workload_builder`); Workloads
  that no longer match the Job are deleted (or, for a suspended Job, updated in place),
  and a running Job without a matching Workload is stopped;
- the Workload is Finished: drop its finalizer; the Job finished: finish the Workload;
- the job is being deleted: finish its Workloads (reason OwnerNotFound, as upstream's
  FinishOrphanedWorkloads) and drop their finalizer, so one orphaned by the deletion
  holds no quota — also those the garbage collector disowned before the hub saw the
  deletion (remembered when their owner reference went);
- succeeded pods are reclaimable, ready pods make PodsReady (with waitForPodsReady);
- the Workload is evicted: stop the Job (suspend, restore its template) and, once no pod
  of it runs, let the engine release the quota (`complete_eviction`); a MultiKueue Job
  runs no pod on the manager, so its copied `active` count is not waited for;
- the job's WorkloadPriorityClass label changed: the Workload takes the new class;
- the Workload is admitted and the job suspended: start it on the admitted flavors (not
  a kind without managedBy whose Workload MultiKueue dispatches, `remote_execution`: its
  Pods stay gated here and run on the worker);
- the job runs without admission: stop it.
An elastic job (`framework.workload_slicing`: the ElasticJobsViaWorkloadSlices gate, a
`ResizesInSlices` kind, the job's `kueue.x-k8s.io/elastic-job` annotation; not one
MultiKueue dispatches) is matched by pod counts alone: a lower count resizes its Workload
in place, a higher one on a Workload holding quota creates a slice replacing it (the
engine swaps them), and it is never stopped for a slice still waiting.
A kind that starts in several writes (`framework.staged_start.StartsInSteps`) has them run
in order. For a kind reading referenced objects (`ReadsReferencedObjects`), a change of
one reconciles the job owning it (a child the kind creates, like a TrainJob's JobSet), or
every job of the kind for anything else (a runtime appearing lets waiting jobs queue).
Kinds with optional capabilities (`integrations.framework.job_capabilities`) get a little
more, and the others exactly the above: a `SkipsJobs` kind's skipped objects are left
alone; a `HoldsJobFinalizer` kind's finalizer comes off the job once its Workload is
Finished, once the job is being deleted (after its Workloads are finished and released),
or when it finished without a Workload; a `StopsByDeletion` kind's job is deleted after
its stop writes (a Pod); a `ComposedJobs` kind's objects that belong to a composed job (a
pod group) are reconciled together under the key `<namespace>/<name>#composed`: the kind
composes them into one job and matches the members with its Workload (`match_composed`:
excess members are deleted, replaced failed ones released, later ones made owners, and
WaitingForReplacementPods follows the missing ones), and every write it plans is made
member by member.
Decisions about the Workload are taken from its newest known version in the API (so a job
never starts on an admission that was not written), engine calls go through the host, and
every write is guarded by the resourceVersion it was planned on: reconciles are
idempotent and safe to repeat after a crash at any point.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from core.adapters.kueue_manifests import label_selector
from core.api.codec import decode
from core.api.json_types import Json
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import PriorityClassKind, Workload
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.api.workload_conditions import WorkloadReason
from core.engine.node_matching import label_selector_matches
from core.kube.errors import Conflict
from core.kube.informer import EventHandlers
from core.kube.object_meta import make_key, namespace_of, object_key, uid_of
from core.kube.object_store import ObjectStore
from core.kube.workqueue import WorkQueue
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason
from core.manager.finalizers import finalizers_of, is_deleting
from core.manager.job_actions import JobActions
from core.manager.remote_execution import is_dispatched_copy, runs_on_a_worker
from core.manager.workload_decisions import condition_of, condition_true
from core.manager.workload_status_patch import status_of
from core.manager.workload_versions import WorkloadVersions
from integrations.framework import job_metadata
from integrations.framework.job_capabilities import (
    ComposedMatch,
    IncompleteJob,
    composed,
    job_finalizer_of,
    skips,
    stops_by_deletion,
)
from integrations.framework.job_kind import JobKind, JobResource, JobWrite
from integrations.framework.json_patch import diff
from integrations.framework.labels import MULTIKUEUE_MANAGED_BY, RESOURCE_IN_USE_FINALIZER
from integrations.framework.multikueue_kinds import stays_gated_when_dispatched
from integrations.framework.pod_set_info import InvalidPodSetInfo
from integrations.framework.priority import MissingPriorityClass, PodPriorityClass, PriorityClasses
from integrations.framework.staged_start import StartsInSteps
from integrations.framework.workload_builder import (
    WorkloadBuildOptions,
    build_workload,
    rebuilt_spec,
)
from integrations.framework.workload_matching import (
    PrebuiltOwnership,
    adopt_prebuilt_workload,
    match_workloads,
)
from integrations.framework.workload_slicing import as_slice, plan_slices, slices_enabled

Store = ObjectStore[dict[str, Any]]
ORPHAN_FINALIZER = "orphan"
"""What the garbage collector puts on an object deleted with orphan propagation."""

JOB_BY_PREBUILT_WORKLOAD = "prebuiltWorkload"
JOB_BY_COMPOSED_NAME = "composedJob"
COMPOSED_KEY_SUFFIX = "#composed"
"""Marks a composed job's queue key (never part of an object name)."""
DEFAULT_WORKERS = 16
"""Jobs reconciled at the same time. A reconcile mostly waits on one write (the Workload's
create, the job's start): at 4, Jobs arriving at 50/s waited seconds for their Workload."""


def owner_index_name(kind: JobKind) -> str:
    """The Workload cache's index from a job of `kind` to the Workloads it controls."""
    return f"owner:{kind.framework}"


def composed_key(namespace: str, name: str) -> str:
    """The queue key of the composed job `name` (a pod group) in `namespace`."""
    return make_key(namespace, name) + COMPOSED_KEY_SUFFIX


def job_key(kind: JobKind, obj: Json) -> str:
    """The key an object of `kind` is reconciled under: its composed job's, or its own."""
    parts = composed(kind)
    name = parts.composed_name(obj) if parts is not None else None
    return composed_key(namespace_of(obj), name) if name else object_key(obj)


def job_composed_index(kind: JobKind) -> Callable[[Json], Iterable[str]]:
    """Index objects of a `ComposedJobs` kind by their composed job's key."""

    def index(obj: Json) -> Iterable[str]:
        key = job_key(kind, obj)
        return (key,) if key.endswith(COMPOSED_KEY_SUFFIX) else ()

    return index


def workload_owner_index(kind: JobKind) -> Callable[[Json], Iterable[str]]:
    """Index Workloads by the `namespace/name` of the job of `kind` controlling them (the
    composed key for a composed job's Workload)."""
    api_version, kind_name = kind.resource.gvk
    parts = composed(kind)

    def index(obj: Json) -> Iterable[str]:
        namespace = namespace_of(obj)
        if parts is not None and (name := parts.composed_name_of_workload(obj)):
            return (composed_key(namespace, name),)
        for owner in (obj.get("metadata") or {}).get("ownerReferences") or ():
            if (
                owner.get("controller") is True
                and owner.get("kind") == kind_name
                and owner.get("apiVersion") == api_version
            ):
                return (make_key(namespace, str(owner.get("name"))),)
        return ()

    return index


def job_prebuilt_workload_index(obj: Json) -> Iterable[str]:
    """Index jobs by the `namespace/name` of the prebuilt Workload they name."""
    name = job_metadata.prebuilt_workload_name(obj)
    return (make_key(namespace_of(obj), name),) if name else ()


@dataclass(frozen=True, slots=True)
class JobManagement:
    """Which jobs the manager manages and how their Workloads are built."""

    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None
    wait_for_pods_ready: bool = False
    elastic_jobs: bool = True
    """ElasticJobsViaWorkloadSlices: an opted-in job of a kind that supports it is resized
    through Workload slices (`integrations.framework.workload_slicing`)."""
    build: WorkloadBuildOptions = field(default_factory=WorkloadBuildOptions)


class JobController:
    """Reconciles the jobs of one kind against their Workloads (see module docstring)."""

    def __init__(
        self,
        kind: JobKind,
        actions: JobActions,
        host: EngineHost,
        versions: WorkloadVersions,
        *,
        jobs: Store,
        workloads: Store,
        resource_flavors: Store,
        namespaces: Store,
        pod_priority_classes: Store,
        workload_priority_values: Mapping[str, int],
        management: JobManagement | None = None,
        queued_as_a_whole: frozenset[tuple[str, str]] = frozenset(),
        admission_checks: Store | None = None,
    ) -> None:
        self.kind = kind
        self.admission_checks = admission_checks
        """Tells MultiKueue checks apart (`remote_execution`); None: none are."""
        self.queued_as_a_whole = queued_as_a_whole
        """(API group, kind) of enabled kinds that queue their children with themselves."""
        self.actions = actions
        self.host = host
        self.versions = versions
        self.jobs = jobs
        self.workloads = workloads
        self.resource_flavors = resource_flavors
        self.namespaces = namespaces
        self.pod_priority_classes = pod_priority_classes
        self.workload_priority_values = workload_priority_values
        self.management = management or JobManagement()
        selector = self.management.managed_jobs_namespace_selector
        self._namespace_selector = label_selector(selector) if selector is not None else None
        self.queue: WorkQueue[str] = WorkQueue(kind.resource.plural)
        self.log = structlog.get_logger("core.manager.jobs").bind(kind=kind.framework)
        self._owner_index = owner_index_name(kind)
        self._owner_index_of = workload_owner_index(kind)
        self._kueue_managed = (None, kind.own_controller_name, MULTIKUEUE_MANAGED_BY)
        self._orphaning: set[str] = set()
        """Jobs seen being deleted with orphan propagation (the GC's `orphan` finalizer)."""
        self._disowned: dict[str, set[str]] = {}
        """Job key -> Workloads whose owner reference to it was taken away (the garbage
        collector orphaning them while the job is deleted with orphan propagation)."""

    # -- triggers ------------------------------------------------------------------------
    def job_handlers(self) -> EventHandlers[dict[str, Any]]:
        def enqueue(obj: Json) -> None:
            self.queue.add(job_key(self.kind, obj))

        def updated(_old: Json, new: Json) -> None:
            if is_deleting(new) and ORPHAN_FINALIZER in finalizers_of(new):
                # Deleted with orphan propagation: its Workloads must outlive it.
                self._orphaning.add(object_key(new))
            enqueue(new)

        return EventHandlers(on_add=enqueue, on_update=updated, on_delete=enqueue)

    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(
            on_add=self.workload_changed,
            on_update=self._workload_updated,
            on_delete=self.workload_changed,
        )

    def referenced_handlers(self, resource: JobResource) -> EventHandlers[dict[str, Any]]:
        """Reconcile the jobs a change of a referenced `resource` object may concern."""
        child = (resource.group, resource.kind) in self.kind.child_kinds

        def changed(obj: Json) -> None:
            if child:
                owner = job_metadata.controller_owner(obj) or {}
                gvk = (str(owner.get("apiVersion")), str(owner.get("kind")))
                if gvk == self.kind.resource.gvk:
                    self.queue.add(make_key(namespace_of(obj), str(owner.get("name"))))
                return
            every = self.jobs.keys()
            for key in every:
                self.queue.add(key)

        return EventHandlers(
            on_add=changed, on_update=lambda _old, new: changed(new), on_delete=changed
        )

    def _workload_updated(self, old: Json, new: Json) -> None:
        for key in set(self._owner_index_of(old)) - set(self._owner_index_of(new)):
            # The owner index no longer leads from the job to this Workload: remember it,
            # so a job being deleted (or gone) still finishes it.
            self._disowned.setdefault(key, set()).add(object_key(new))
            self.queue.add(key)
        self.workload_changed(new)

    def _disowned_workloads(self, job_key: str) -> list[Json]:
        """Current versions of the Workloads the job `job_key` was disowned of."""
        out = []
        keys = self._disowned.get(job_key, set())
        for workload_key in sorted(keys):
            current = self.versions.current(workload_key) or self.workloads.get(workload_key)
            if current is None or _has_controller(current):
                keys.discard(workload_key)  # gone, or owned again: nothing to finish
            else:
                out.append(current)
        return out

    def workload_changed(self, workload: Json) -> None:
        """Queue the job a Workload belongs to (its controller, or the job naming it)."""
        for key in self._owner_index_of(workload):
            self.queue.add(key)
        for job in self.jobs.by_index(JOB_BY_PREBUILT_WORKLOAD, object_key(workload)):
            self.queue.add(object_key(job))

    async def run(self, workers: int = DEFAULT_WORKERS) -> None:
        known = {job_key(self.kind, obj) for obj in self.jobs}
        for key in known:
            self.queue.add(key)
        await self.queue.run_workers(self._reconcile_or_retry, workers)

    async def _reconcile_or_retry(self, key: str) -> None:
        try:
            await self.reconcile(key)
        except Conflict:
            # Planned on a version that moved on (often the hub's own write not yet in the
            # cache): plan again shortly from the newer one. Not an error worth a warning.
            self.log.debug("job.conflict", job=key)
            self.queue.add_rate_limited(key)

    # -- reading -------------------------------------------------------------------------
    def _manages(self, job: Json) -> bool:
        if skips(self.kind, job):
            return False  # upstream's Skip: a Pod not marked managed, a RayJob on a cluster
        if self.kind.managed_by(job) not in self._kueue_managed:
            return False
        if self._child_of_queued_kind(job):
            return False  # queued with its parent (a JobSet's Job)
        if job_metadata.queue_name(job) or job_metadata.prebuilt_workload_name(job) is not None:
            return True
        if not self.management.manage_jobs_without_queue_name:
            return False
        namespace = self.namespaces.get(namespace_of(job))
        labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
        return namespace is not None and label_selector_matches(self._namespace_selector, labels)

    def _child_of_queued_kind(self, job: Json) -> bool:
        owner = job_metadata.controller_owner(job)
        if owner is None:
            return False
        group = str(owner.get("apiVersion") or "").rpartition("/")[0]
        return (group, str(owner.get("kind") or "")) in self.queued_as_a_whole

    def _owned(self, job_key: str) -> list[Json]:
        """Newest versions of the Workloads whose controller is a job of this name."""
        out = []
        for cached in self.workloads.by_index(self._owner_index, job_key):
            current = self.versions.current(object_key(cached)) or cached
            out.append(current)
        out.sort(
            key=lambda w: (str((w.get("metadata") or {}).get("creationTimestamp")), object_key(w))
        )
        return out

    def _flavors(self, workloads: Iterable[Workload]) -> dict[str, ResourceFlavor]:
        names = {
            flavor
            for workload in workloads
            if workload.status.admission is not None
            for psa in workload.status.admission.pod_set_assignments
            for flavor in psa.flavors.values()
        }
        out = {}
        for name in names:
            cached = self.resource_flavors.get(name)
            if cached is not None:
                out[name] = decode(ResourceFlavor, cached)
        return out

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

    # -- reconcile -----------------------------------------------------------------------
    def _job(self, key: str) -> Json | None:
        """The job under `key`: a cached object, or the composed job of its members."""
        parts = composed(self.kind)
        if parts is None:
            return self.jobs.get(key)
        if key.endswith(COMPOSED_KEY_SUFFIX):
            members = self.jobs.by_index(JOB_BY_COMPOSED_NAME, key)
            namespace, _, name = key.removesuffix(COMPOSED_KEY_SUFFIX).partition("/")
            return parts.compose(namespace, name, members) if members else None
        job = self.jobs.get(key)
        if job is not None and parts.composed_name(job):
            return None  # reconciled under its composed job's key
        return job

    async def reconcile(self, key: str) -> None:
        job = self._job(key)
        owned = self._owned(key)
        if job is None or is_deleting(job):
            # Orphaned by the job's deletion (kept until then): it stays, finished.
            for workload in self._disowned_workloads(key):
                self._finish_orphaned(workload)
                await self.actions.release_workload(workload)
                self._disowned[key].discard(object_key(workload))  # done: a retry skips it
            if not self._disowned.get(key, True):
                del self._disowned[key]
        if job is None:
            # Forgotten only once no Workload names it any more: until the garbage
            # collector's change reaches the cache, a retry after a Conflict, or an event
            # of the hub's own finishing write, must still know it orphaned them.
            orphaned = key in self._orphaning
            if not owned:
                self._orphaning.discard(key)
            if self.jobs.get(key) is None:
                for workload in owned:
                    if not self._built_here(workload):
                        continue  # its builder (a LeaderWorkerSet's group) deletes it
                    if is_dispatched_copy(workload):
                        continue  # the manager's (a pod group's, before its Pods come)
                    if orphaned:  # the GC has not yet taken its owner reference away
                        self._finish_orphaned(workload)
                        await self.actions.release_workload(workload)
                        continue
                    await self.actions.delete_workload(None, workload)
            return
        if not self._manages(job):
            return
        try:
            await self._reconcile(key, job, owned)
        except IncompleteJob:
            self.log.debug("job.incomplete", job=key)  # the next member's event comes back

    async def _reconcile(self, key: str, job: Json, owned: list[Json]) -> None:
        is_composed = key.endswith(COMPOSED_KEY_SUFFIX)
        job_uid = uid_of(job)
        mine = [w for w in owned if is_composed or _controller_uid(w) == job_uid]
        strays = [w for w in owned if not is_composed and _controller_uid(w) != job_uid]
        for workload in strays:  # left by an earlier Job of the same name
            await self.actions.delete_workload(None, workload)
        if is_deleting(job):
            for workload in mine:
                if not self._built_here(workload):
                    continue  # a group's Pods going away do not end its builder's Workload
                self._finish_orphaned(workload)
                await self.actions.release_workload(workload)
            await self._release_job(job)
            return
        log = self.log.bind(job=key)
        prebuilt = job_metadata.prebuilt_workload_name(job)
        if prebuilt is not None:
            if is_composed:
                await self._release_deleted_members(job)
                workload_obj = self._prebuilt_group(job, prebuilt, log)
            else:
                workload_obj = await self._prebuilt(job, prebuilt)
            if workload_obj is not None:
                await self._drive(job, workload_obj, log)
            return
        kind = self.kind
        if is_composed:
            await self._reconcile_group(key, job, mine, log)
            return
        if self._elastic(job) and await self._reconcile_slices(job, mine, log):
            return
        decoded = [decode(Workload, w) for w in mine]
        by_name = {w.metadata.name: obj for w, obj in zip(decoded, mine, strict=True)}
        match = match_workloads(kind, job, decoded, self._flavors(decoded))
        for unmatched in match.to_delete:
            await self.actions.delete_workload(job, by_name[unmatched.metadata.name])
        if match.stop_job:
            restore = match.restore_from
            await self._stop(job, kind.plan_stop(job, restore), "No matching Workload")
            return
        if match.to_update is not None:
            spec = rebuilt_spec(kind, job, match.to_update, self._priority_classes())
            await self.actions.replace_workload_spec(
                job, by_name[match.to_update.metadata.name], spec
            )
            return
        if match.match is None:
            if kind.finished(job) is None and not match.to_delete:
                await self._create(job, log)
            elif kind.finished(job) is not None and not mine:
                await self._release_job(job)
            return
        await self._drive(job, by_name[match.match.metadata.name], log)

    async def _reconcile_group(self, key: str, job: Json, mine: list[Json], log: Any) -> None:
        """A composed job (a pod group) and its Workload, matched as upstream matches a
        pod group (`ComposedJobs.match_composed`): excess members are deleted, replaced
        ones released, later ones made owners, WaitingForReplacementPods kept up to date,
        and the group driven on with the members that count."""
        parts = composed(self.kind)
        assert parts is not None
        workload_obj = mine[0] if mine else None
        workload = decode(Workload, workload_obj) if workload_obj is not None else None
        found = parts.match_composed(job, workload)
        await self._settle_members(job, found)
        meta = job.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        narrowed = parts.compose(namespace, name, found.kept) if found.kept else job
        if workload_obj is None or workload is None:
            if found.problem is not None:
                log.info("job.group_compose_error", problem=found.problem)
                first = parts.members_of(job)[0]
                self.actions.warn(first, EventReason.ERR_WORKLOAD_COMPOSE, found.problem)
                return
            if not found.equivalent:
                raise IncompleteJob(f"too few runnable members in {key}")
            if self.kind.finished(narrowed) is None:
                await self._create(narrowed, log)
            else:
                await self._release_job(job)
            return
        if not found.equivalent:
            log.info("job.group_out_of_sync", workload=object_key(workload_obj))
            await self.actions.delete_workload(job, workload_obj)
            if not self.kind.is_suspended(job) and self.kind.finished(job) is None:
                await self._stop(job, self.kind.plan_stop(job, workload), "No matching Workload")
            return
        if found.new_owners:
            owners = [*workload.metadata.owner_references, *found.new_owners]
            meta_with_owners = msgspec.structs.replace(workload.metadata, owner_references=owners)
            adopted = msgspec.structs.replace(workload, metadata=meta_with_owners)
            log.info("job.group_owners_added", count=len(found.new_owners))
            await self.actions.adopt_workload(workload_obj, adopted)
            return  # the informer brings the new version
        status = status_of(workload_obj)
        finished = condition_true(status, Cond.FINISHED)
        if not finished and _waiting_changes(status, found.absent > 0):
            self.host.set_waiting_for_replacement_pods(object_key(workload_obj), found.absent > 0)
        await self._drive(job if finished else narrowed, workload_obj, log)

    async def _settle_members(self, job: Json, found: ComposedMatch) -> None:
        """Excess members lose their finalizer and are deleted; released ones lose it."""
        finalizer = job_finalizer_of(self.kind)
        for member in (*found.excess, *found.released):
            if finalizer is not None and finalizer in finalizers_of(member):
                await self.actions.release_job(member, finalizer)
        for member in found.excess:
            if not is_deleting(member):
                self.log.info("job.excess_member_deleted", member=object_key(member))
                await self.actions.delete_job(member)
                self.actions.note(member, EventReason.EXCESS_POD_DELETED, "Excess pod deleted")

    def _elastic(self, job: Json) -> bool:
        """Whether the job is resized through Workload slices. Slices of a MultiKueue job
        would each be dispatched (a second remote copy): it is resized the ordinary way
        (stopped and queued again) until slices follow it to the worker."""
        return (
            slices_enabled(self.kind, job, self.management.elastic_jobs)
            and self.kind.managed_by(job) != MULTIKUEUE_MANAGED_BY
        )

    async def _reconcile_slices(self, job: Json, mine: list[Json], log: Any) -> bool:
        """An elastic job's Workload slices (`framework.workload_slicing`); False when its
        pod sets no longer match them and the ordinary rules take over."""
        active: list[Json] = []
        for obj in mine:
            if condition_true(status_of(obj), Cond.FINISHED):
                if RESOURCE_IN_USE_FINALIZER in finalizers_of(obj):
                    await self.actions.release_workload(obj)  # a replaced slice
            else:
                active.append(obj)
        decoded = [decode(Workload, w) for w in active]
        by_name = {w.metadata.name: obj for w, obj in zip(decoded, active, strict=True)}
        plan = plan_slices(self.kind, job, decoded)
        for workload, reason, message in plan.finish:
            log.info("job.finish_slice", workload=workload.metadata.name, reason=reason.value)
            self.host.finish(
                object_key(by_name[workload.metadata.name]),
                succeeded=False,
                message=message,
                reason=reason,
            )
        if not plan.compatible:
            return False
        if plan.create_first or plan.create_replacing is not None:
            if self.kind.finished(job) is None:
                await self._create(job, log, replaces=plan.create_replacing)
            return True
        if plan.drive is None:
            return True
        driven = by_name[plan.drive.metadata.name]
        if plan.resize is not None:
            log.info("job.resize_slice", workload=plan.drive.metadata.name, counts=plan.resize)
            await self.actions.resize_workload(job, driven, plan.resize)
            return True
        await self._drive(job, driven, log, elastic=True)
        return True

    def _finish_orphaned(self, workload: Json) -> None:
        """A job being deleted finishes its Workload first (upstream's
        FinishOrphanedWorkloads): deleted with orphan propagation, the Workload stays and
        must not hold quota or look like it still waits."""
        if is_deleting(workload) or condition_true(status_of(workload), Cond.FINISHED):
            return
        self.host.finish(
            object_key(workload),
            succeeded=False,
            message="The workload's owner no longer exists",
            reason=WorkloadReason.OWNER_NOT_FOUND,
        )

    async def _create(self, job: Json, log: Any, *, replaces: Workload | None = None) -> None:
        try:
            workload = build_workload(
                self.kind, job, self._priority_classes(), self.management.build
            )
        except MissingPriorityClass as error:
            self.actions.warn(job, EventReason.ERROR_CREATING_WORKLOAD, str(error))
            raise
        if self._elastic(job) and composed(self.kind) is None:
            workload = as_slice(
                self.kind, job, workload, replaces, max_length=self.management.build.max_name_length
            )
        parts = composed(self.kind)
        if parts is not None and parts.members_of(job):
            workload = parts.composed_workload(workload, job)
        log.info("job.create_workload", workload=workload.metadata.name)
        await self.actions.create_workload(job, workload)

    async def _prebuilt(self, job: Json, name: str) -> Json | None:
        key = make_key(namespace_of(job), name)
        workload_obj = self.versions.current(key)
        if workload_obj is None:
            return None
        ownership, adopted = adopt_prebuilt_workload(self.kind, job, decode(Workload, workload_obj))
        if ownership is PrebuiltOwnership.ADOPTED:
            await self.actions.adopt_workload(workload_obj, adopted)
            return None  # the informer brings the adopted version
        if ownership is PrebuiltOwnership.FOREIGN:
            return None
        return workload_obj

    def _prebuilt_group(self, job: Json, name: str, log: Any) -> Json | None:
        """The prebuilt Workload of a composed job (a LeaderWorkerSet's group), when it
        exists and still stands for the group: compared as upstream compares a pod group
        with its Workload (its roles and counts), since its pod sets come from the
        builder's templates, not from the Pods. One that does not is finished, OutOfSync."""
        workload_obj = self.versions.current(make_key(namespace_of(job), name))
        parts = composed(self.kind)
        if workload_obj is None or parts is None:
            return None  # not created yet: its builder's event brings the group back
        workload = decode(Workload, workload_obj)
        if parts.prebuilt_workload_matches(job, workload):
            return workload_obj
        status = status_of(workload_obj)
        if not condition_true(status, Cond.FINISHED):
            log.info("job.prebuilt_out_of_sync", workload=name)
            self.host.finish(
                object_key(workload_obj),
                succeeded=False,
                message="The prebuilt workload is out of sync with its user job",
                reason=WorkloadReason.OUT_OF_SYNC,
            )
        return None

    def _prebuilt_group_job(self, job: Json) -> bool:
        parts = composed(self.kind)
        return (
            parts is not None
            and bool(parts.members_of(job))
            and job_metadata.prebuilt_workload_name(job) is not None
        )

    def _built_here(self, workload: Json) -> bool:
        """Whether this kind's controller built the Workload (it controls it, or nothing
        does); a prebuilt one another kind controls is that kind's to delete or finish."""
        for owner in (workload.get("metadata") or {}).get("ownerReferences") or ():
            if owner.get("controller") is True:
                gvk = (str(owner.get("apiVersion")), str(owner.get("kind")))
                return gvk == self.kind.resource.gvk
        return True

    async def _drive(
        self, job: Json, workload_obj: Json, log: Any, *, elastic: bool = False
    ) -> None:
        """One step for a job and the Workload that matches it. An `elastic` job's slice
        waiting for admission (a scale-up) leaves the running job alone."""
        kind = self.kind
        key = object_key(workload_obj)
        status = status_of(workload_obj)
        workload = decode(Workload, workload_obj)
        if condition_true(status, Cond.FINISHED):
            await self._release_job(job)
            if RESOURCE_IN_USE_FINALIZER in finalizers_of(workload_obj):
                await self.actions.release_workload(workload_obj)
            return
        if is_deleting(workload_obj):
            await self._stop(job, kind.plan_stop(job, workload), "Workload is deleted")
            parts = composed(kind)
            if parts is not None and parts.members_of(job):
                await self._release_job(job)  # a group's Pods go with it, as upstream
            await self.actions.release_workload(workload_obj)
            return
        finish = kind.finished(job)
        if finish is not None:
            log.info("job.finished", workload=key, succeeded=finish.succeeded)
            self.host.finish(key, succeeded=finish.succeeded, message=finish.message)
            return
        self._report_progress(job, key, status)
        if await self._follow_priority_class(job, workload_obj, workload):
            return
        if condition_true(status, Cond.EVICTED):
            evicted = condition_of(status, Cond.EVICTED) or {}
            stopped = await self._stop(
                job,
                kind.plan_stop(job, workload),
                str(evicted.get("message") or "Workload evicted"),
            )
            # A MultiKueue Job runs no pod here: its `active` is the worker's, copied back,
            # and may never drop once the copies are gone, so it is never waited for.
            remote_only = kind.managed_by(stopped) == MULTIKUEUE_MANAGED_BY or self._remote(
                workload_obj
            )
            if (remote_only or not kind.is_active(stopped)) and condition_true(
                status, Cond.QUOTA_RESERVED
            ):
                log.info("job.eviction_completed", workload=key)
                self.host.complete_eviction(key)
            return
        if kind.is_suspended(job):
            queue = job_metadata.queue_name(job)
            if condition_true(status, Cond.ADMITTED):
                if self._remote(workload_obj):
                    return  # it runs on the MultiKueue worker; here it stays gated
                await self._start(job, workload, key, log)
            elif (
                workload.spec.queue_name != queue
                and not condition_true(status, Cond.QUOTA_RESERVED)
                and not self._prebuilt_group_job(job)  # its builder keeps the queue name
            ):
                await self.actions.set_workload_queue(workload_obj, queue)
            return
        if not condition_true(status, Cond.ADMITTED) and not elastic:
            await self._stop(job, kind.plan_stop(job, workload), "Not admitted by cluster queue")

    def _remote(self, workload_obj: Json) -> bool:
        """A kind without managedBy whose Workload MultiKueue dispatches: its Pods run on
        the worker only (`core.manager.remote_execution`)."""
        return stays_gated_when_dispatched(self.kind) and runs_on_a_worker(
            workload_obj, self.admission_checks
        )

    def _objects(self, job: Json, after: Json) -> list[tuple[Json, Json]]:
        """(object before, object after) for each object a write to `job` touches: the job
        itself, or each member of a composed job."""
        parts = composed(self.kind)
        members = parts.members_of(job) if parts is not None else []
        if parts is None or not members:
            return [(job, after)]
        return list(zip(members, parts.members_of(after), strict=True))

    async def _stop(self, job: Json, writes: list[JobWrite], why: str) -> Json:
        """Run a stop plan; a `StopsByDeletion` kind's job is then deleted. A composed
        job's plan is run member by member (and returns the job as it was planned)."""
        parts = composed(self.kind)
        if parts is not None and parts.members_of(job):
            for write in writes:
                for before, after in self._objects(job, write.job):
                    ops = diff(before, after)
                    if ops:
                        member = JobWrite(write.subresource, ops, dict(after))
                        stopped = await self.actions.stop(before, [member], why)
                        if stops_by_deletion(self.kind):
                            await self.actions.delete_job(stopped)
            return job
        stopped = await self.actions.stop(job, writes, why)
        if writes and stops_by_deletion(self.kind):
            await self.actions.delete_job(stopped)
        return stopped

    async def _release_deleted_members(self, job: Json) -> None:
        """A member of a prebuilt group that is being deleted is not waited for: its
        finalizer comes off at once (the group goes on without it). A group the kind
        builds keeps its deleted members until they are replaced (`match_composed`)."""
        finalizer = job_finalizer_of(self.kind)
        parts = composed(self.kind)
        if finalizer is None or parts is None:
            return
        for member in parts.members_of(job):
            if is_deleting(member) and finalizer in finalizers_of(member):
                await self.actions.release_job(member, finalizer)

    async def _release_job(self, job: Json) -> None:
        """Drop a `HoldsJobFinalizer` kind's finalizer from the job (from every member of a
        composed job), where it is still there."""
        finalizer = job_finalizer_of(self.kind)
        if finalizer is None:
            return
        parts = composed(self.kind)
        objects = parts.members_of(job) if parts is not None else []
        for obj in objects or [dict(job)]:
            if finalizer in finalizers_of(obj):
                await self.actions.release_job(obj, finalizer)

    async def _follow_priority_class(
        self, job: Json, workload_obj: Json, workload: Workload
    ) -> bool:
        """The job's WorkloadPriorityClass label changed: give the Workload the new class.

        As upstream, only between WorkloadPriorityClasses (the label is the one part of a
        running job a user may change to reprioritise it); an unknown class waits. A job
        naming a prebuilt Workload never moves it, as upstream's reconciler leaves a
        prebuilt Workload's priority alone: its builder keeps the class (a
        LeaderWorkerSet; on a MultiKueue worker the manager, which patches the copy's
        priority while the copied job keeps its first label).
        """
        change = priority_class_change(job, workload, self.workload_priority_values)
        if change is None:
            return False
        await self.actions.set_workload_priority(workload_obj, *change)
        return True

    def _report_progress(self, job: Json, key: str, status: Json) -> None:
        """Reclaimable pods and PodsReady, from the job's status to the engine."""
        wanted = {pod.name: pod.count for pod in self.kind.reclaimable_pods(job)}
        have = {
            str(p.get("name")): int(p.get("count") or 0)
            for p in status.get("reclaimablePods") or ()
            if isinstance(p, Mapping)
        }
        if wanted != have:
            self.host.set_reclaimable_pods(key, wanted)
        if self.management.wait_for_pods_ready and condition_true(status, Cond.ADMITTED):
            ready = self.kind.pods_ready(job)
            current = condition_of(status, Cond.PODS_READY)
            if current is None or (current.get("status") == "True") != ready:
                self.host.set_pods_ready(key, ready)

    async def _start(self, job: Json, workload: Workload, key: str, log: Any) -> None:
        kind = self.kind
        try:
            if isinstance(kind, StartsInSteps):
                writes = kind.plan_start(job, workload, self._flavors((workload,)))
            else:
                started = kind.start(job, workload, self._flavors((workload,)))
        except InvalidPodSetInfo as error:
            log.warning("job.failed_to_start", workload=key, error=str(error))
            self.actions.warn(job, EventReason.FAILED_TO_START, str(error))
            self.host.finish(
                key,
                succeeded=False,
                message=str(error),
                reason=WorkloadReason.FAILED_TO_START,
            )
            return
        admission = workload.status.admission
        cluster_queue = admission.cluster_queue if admission is not None else ""
        if isinstance(kind, StartsInSteps):
            if writes:
                log.info("job.start", workload=key, cluster_queue=cluster_queue)
                await self.actions.start_in_steps(job, writes, cluster_queue)
            return
        for before, after in self._objects(job, started):
            ops = diff(before, after)
            if ops:
                log.info("job.start", workload=key, cluster_queue=cluster_queue)
                await self.actions.start(before, ops, cluster_queue)


def priority_class_change(
    job: Json, workload: Workload, values: Mapping[str, int]
) -> tuple[str, int] | None:
    """The WorkloadPriorityClass (name, value) the Workload should take because the job's
    label names another one; None when it stays. As upstream, only between
    WorkloadPriorityClasses, an unknown class waits, and a job naming a prebuilt Workload
    never moves it (whoever built the Workload keeps its class)."""
    if job_metadata.prebuilt_workload_name(job) is not None:
        return None
    wanted = job_metadata.workload_priority_class_name(job)
    ref = workload.spec.priority_class_ref
    if not wanted or ref is None or ref.kind != PriorityClassKind.WORKLOAD_PRIORITY_CLASS:
        return None
    value = values.get(wanted)
    if ref.name == wanted or value is None:
        return None
    return wanted, value


def _waiting_changes(status: Json, waiting: bool) -> bool:
    """Whether WaitingForReplacementPods should change: its status flips, or, waiting
    while evicted, it should take the eviction's reason (as upstream words it)."""
    current = condition_of(status, Cond.WAITING_FOR_REPLACEMENT_PODS)
    if current is None:
        return waiting
    if (current.get("status") == "True") != waiting:
        return True
    evicted = condition_of(status, Cond.EVICTED) or {}
    return (
        waiting
        and evicted.get("status") == "True"
        and (current.get("reason") != evicted.get("reason"))
    )


def _controller_uid(workload: Json) -> str:
    for owner in (workload.get("metadata") or {}).get("ownerReferences") or ():
        if owner.get("controller") is True:
            return str(owner.get("uid") or "")
    return ""


def _has_controller(workload: Json) -> bool:
    references = (workload.get("metadata") or {}).get("ownerReferences") or ()
    return any(reference.get("controller") for reference in references)
