"""The MultiKueue workload reconciler: one manager Workload and its copies, per pass.

Keys are `namespace/name` of manager Workloads whose status lists a MultiKueue check.
A pass reads everything from caches (the manager's Workloads and Jobs, each connected
worker's origin-filtered Workloads and Jobs), lets `group_plan` decide, and runs the
steps in order, stopping at the first failure (the key then comes back with backoff).
Every step is idempotent, so a pass may be repeated or cut short by a crash at any
point and the next pass finishes the job.

Passes are triggered by changes (manager Workloads and Jobs, remote objects, workers
connecting or going away, capacity reports, config changes) and by the timers the plan
asks for (nomination rounds, the worker-lost timeout). The manager Workload a pass
starts from is the newest of the cached one and the one this reconciler last wrote, so
a pass right after a write does not redo it from a stale cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import structlog

from core.api.admission_check import CheckState
from core.api.kube_time import format_time
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.kube.client import KubeClient
from core.kube.errors import KubeError, NotFound
from core.kube.informer import EventHandlers
from core.kube.micro_time import utc_now
from core.kube.object_meta import (
    make_key,
    name_of,
    namespace_of,
    object_key,
    resource_version_of,
    uid_of,
)
from core.kube.object_store import ObjectStore
from core.kube.status_writer import write_status
from core.kube.workqueue import WorkQueue
from hub.multikueue.connections.registry import WorkerRegistry, WorkerView
from hub.multikueue.connections.remote_caches import JOBS_BY_WORKLOAD
from hub.multikueue.connections.worker_events import (
    CapacityChanged,
    ConfigChanged,
    RemoteObjectChanged,
    WorkerConnected,
    WorkerDisconnected,
    WorkerEvent,
)
from hub.multikueue.dispatch import owner_objects
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics
from hub.multikueue.dispatch.dispatchers import (
    Dispatcher,
    DispatchRequest,
    WorkerChoice,
)
from hub.multikueue.dispatch.group_plan import (
    Admitted,
    CreateRemote,
    DeactivateRemoteCopy,
    Dispatch,
    GroupSnapshot,
    PatchRemotePriority,
    RemoteSlot,
    RemoveRemote,
    Requeue,
    RetryLater,
    Settled,
    Step,
    SyncJob,
    WriteStatus,
    may_await_final_status,
    plan_group,
    plan_nomination,
)
from hub.multikueue.dispatch.job_sync import JobSync, JobSyncOutcome
from hub.multikueue.dispatch.remote_writes import (
    MULTIKUEUE_FIELD_MANAGER,
    WORKLOAD_KIND,
    WORKLOADS,
    RemoteWrites,
)
from hub.multikueue.dispatch.settings import DispatchSettings
from hub.multikueue.dispatch.sibling_placement import sibling_placement
from hub.multikueue.dispatch.workload_facts import (
    Json,
    admission_checks,
    cluster_name,
    cluster_queue,
    controller_owner,
    find_check,
    has_quota_reservation,
    is_deleting,
    is_finished,
    true_condition,
)
from integrations.framework.job_capabilities import composed
from integrations.framework.job_kind import JobKind
from integrations.framework.multikueue_copy import managed_by_multikueue
from integrations.framework.multikueue_kinds import (
    dispatched_without_managed_by,
    names_remote_workloads,
)
from integrations.framework.registry import FrameworkRegistry

Store = ObjectStore[dict[str, Any]]


class RetryNeeded(RuntimeError):
    """A pass could not finish for a reason worth retrying with backoff."""


def newer(candidate: str, than: str) -> bool:
    """resourceVersion order (etcd revisions are increasing integers; else: differs)."""
    if candidate.isdigit() and than.isdigit():
        return int(candidate) > int(than)
    return candidate != than


def _owner_key(framework: str, job_key: str) -> str:
    """A job's key across kinds: a Job and a JobSet may share a name."""
    return f"{framework}:{job_key}"


class WorkloadReconciler:
    """Drives manager Workloads with a MultiKueue check (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        registry: WorkerRegistry,
        dispatcher: Dispatcher,
        settings: DispatchSettings,
        *,
        workloads: Store,
        jobs: Mapping[str, Store],
        kinds: FrameworkRegistry,
        writes: RemoteWrites,
        metrics: DispatchMetrics | None = None,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.client = client
        self.registry = registry
        self.dispatcher = dispatcher
        self.settings = settings
        self.workloads = workloads
        self.jobs = jobs
        """The manager's jobs, one cache per enabled kind (by framework name)."""
        for kind in kinds:
            parts = composed(kind)
            store = jobs.get(kind.framework)
            if parts is not None and store is not None:
                store.add_indexer(owner_objects.MEMBERS_INDEX, owner_objects.members_index(parts))
        self.kinds = kinds
        self.writes = writes
        self.metrics = metrics
        self.wall_clock = wall_clock
        self.job_sync = JobSync(client, writes)
        self.queue: WorkQueue[str] = WorkQueue("multikueue-workloads")
        self._deleted: dict[str, Json] = {}
        self._written: dict[str, Json] = {}
        self._owned_by_job: dict[str, set[str]] = {}
        self._waiting: set[str] = set()
        self.log = structlog.get_logger("hub.multikueue.dispatch")

    # -- triggers -----------------------------------------------------------------------

    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(
            on_add=self._workload_seen,
            on_update=lambda _old, new: self._workload_seen(new),
            on_delete=self._workload_deleted,
        )

    def job_handlers(self, kind: JobKind) -> EventHandlers[dict[str, Any]]:
        parts = composed(kind)

        def changed(job: dict[str, Any]) -> None:
            group = parts.composed_name(job) if parts is not None else None
            job_key = make_key(namespace_of(job), group) if group else object_key(job)
            for key in self._owned_by_job.get(_owner_key(kind.framework, job_key), ()):
                self.queue.add(key)

        return EventHandlers(
            on_add=changed, on_update=lambda _old, new: changed(new), on_delete=changed
        )

    def on_worker_event(self, event: WorkerEvent) -> None:
        """Registry listener: quick, no I/O."""
        if isinstance(event, RemoteObjectChanged):
            if event.workload_key:
                self.queue.add(event.workload_key)
        elif isinstance(event, WorkerConnected | WorkerDisconnected):
            if self.metrics is not None:
                self.metrics.worker_state(event.cluster, isinstance(event, WorkerConnected))
            self.enqueue_all()
        elif isinstance(event, CapacityChanged):
            for key in list(self._waiting):
                self.queue.add(key)
            for key in self.dispatcher.capacity_sensitive():
                self.queue.add(key)
        elif isinstance(event, ConfigChanged):
            self.enqueue_all()

    def enqueue_all(self) -> None:
        for workload in self.workloads:
            if admission_checks(workload):
                self.queue.add(object_key(workload))

    def _workload_seen(self, workload: dict[str, Any]) -> None:
        checks = admission_checks(workload)
        if not checks:
            return
        key = object_key(workload)
        owner_key = self._owner_job_key(workload)
        if owner_key is not None:
            siblings = self._owned_by_job.setdefault(owner_key, set())
            siblings.add(key)
            kind = self._owner_kind(workload)
            if cluster_name(workload) and kind is not None and names_remote_workloads(kind):
                for sibling in siblings - {key}:  # waiting for this one's worker
                    self.queue.add(sibling)
        # Waiting for a worker to be chosen: a new capacity report may change the choice.
        # Once nominated, only the nomination's own timeout moves it on, so capacity
        # reports (every few seconds from every worker) need not re-queue it - except a
        # nomination made on a guess (the dispatcher's `capacity_sensitive`).
        waiting = (
            any(c.state is CheckState.PENDING for c in checks)
            and cluster_name(workload) is None
            and not (workload.get("status") or {}).get("nominatedClusterNames")
            and has_quota_reservation(workload)
            and not is_finished(workload)
        )
        if waiting:
            self._waiting.add(key)
        else:
            self._waiting.discard(key)
        self.queue.add(key)

    def _workload_deleted(self, workload: dict[str, Any]) -> None:
        key = object_key(workload)
        self._waiting.discard(key)
        owner_key = self._owner_job_key(workload)
        if owner_key is not None:
            keys = self._owned_by_job.get(owner_key)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    self._owned_by_job.pop(owner_key, None)
        if admission_checks(workload):
            self._deleted[key] = workload
            self.queue.add(key)

    def _owner_kind(self, workload: Json) -> JobKind | None:
        owner = controller_owner(workload)
        return None if owner is None else self.kinds.for_owner(owner.api_version, owner.kind)

    def _owner_job_key(self, workload: Json) -> str | None:
        """The owner job's key: a pod group's by its name (any member's change counts)."""
        owner = controller_owner(workload)
        kind = self._owner_kind(workload)
        if owner is None or kind is None:
            return None
        group = owner_objects.group_of(kind, workload)
        name = group[1] if group is not None else owner.name
        return _owner_key(kind.framework, make_key(namespace_of(workload), name))

    def _local_job(self, kind: JobKind, local: Json) -> Json | None:
        """The manager's owner job of `local` (a pod group: its members composed)."""
        store = self.jobs.get(kind.framework)
        owner = controller_owner(local)
        if store is None or owner is None:
            return None
        return owner_objects.local_job(kind, local, owner, store)

    def is_removing(self, key: str) -> bool:
        """Whether a pass for this deleted Workload is still removing its copies."""
        return key in self._deleted

    # -- running ------------------------------------------------------------------------

    async def run(self) -> None:
        await self.queue.run_workers(self._reconcile_key, self.settings.workers)

    async def _reconcile_key(self, key: str) -> None:
        try:
            await self.reconcile(key)
        except RetryNeeded as error:
            self.log.debug("multikueue.retry", workload=key, why=str(error))
            self.queue.add_rate_limited(key)

    def current(self, key: str) -> Json | None:
        """The newest known version of a manager Workload (cache or our last write)."""
        cached = self.workloads.get(key)
        written = self._written.get(key)
        if written is None:
            return cached
        if cached is None:
            self._written.pop(key, None)
            return None
        if uid_of(written) == uid_of(cached) and newer(
            resource_version_of(written), resource_version_of(cached)
        ):
            return written
        self._written.pop(key, None)
        return cached

    def multikueue_check(self, workload: Json) -> str | None:
        for check in admission_checks(workload):
            if self.registry.is_multikueue_check(check.name):
                return check.name
        return None

    async def reconcile(self, key: str) -> None:
        local = self.current(key)
        deleted = local is None
        if local is None:
            local = self._deleted.get(key)
            if local is None:
                self.dispatcher.forget(key)
                return
        check = self.multikueue_check(local)
        if check is None:
            self._settle(key, local)
            return
        snapshot = self.snapshot(key, local, check, deleted=deleted)
        await self.execute(snapshot, plan_group(snapshot))

    # -- reading ------------------------------------------------------------------------

    def snapshot(self, key: str, local: Json, check: str, *, deleted: bool) -> GroupSnapshot:
        now = self.wall_clock()
        rejection, owner_missing, owner_name = self._owner_facts(local, deleted)
        views = self.registry.workers_for_check(check)
        return GroupSnapshot(
            key=key,
            local=local,
            deleted=deleted,
            check=check,
            slots=tuple(self._slot(view, key, local, owner_name) for view in views),
            now=now.timestamp(),
            now_text=format_time(now),
            worker_lost_timeout=self.settings.worker_lost_timeout_seconds,
            rejection=rejection,
            owner_missing=owner_missing,
        )

    def _owner_facts(self, local: Json, deleted: bool) -> tuple[str | None, bool, str | None]:
        """(rejection message, owner not cached yet, owner job name)."""
        owner = controller_owner(local)
        if owner is None:
            return "No multikueue adapter found", False, None
        kind = self._owner_kind(local)
        if kind is None:
            return f'No multikueue adapter found for owner kind "{owner.gvk_text}"', False, None
        if deleted:
            return None, False, owner.name
        job = self._local_job(kind, local)
        if job is None:
            return None, True, owner.name
        if dispatched_without_managed_by(kind):
            return None, False, owner.name  # no managedBy: every queued one is dispatched
        managed, reason = managed_by_multikueue(kind.managed_by(job))
        if not managed:
            return f"The owner is not managed by Kueue: {reason}", False, owner.name
        return None, False, owner.name

    def _slot(self, view: WorkerView, key: str, local: Json, owner: str | None) -> RemoteSlot:
        connection = view.connection
        caches = view.caches
        if not view.connected or caches is None:
            since = None if connection is None else connection.disconnected_since
            return RemoteSlot(
                view.name, False, disconnected_since=None if since is None else since.timestamp()
            )
        pending = self.writes.pending
        kind = self._owner_kind(local)
        jobs = None if kind is None else caches.jobs.get(kind.framework)
        remote: list[Json] = []
        facts = controller_owner(local)
        if owner is not None and kind is not None and jobs is not None and facts is not None:
            names = owner_objects.copied_names(kind, local, facts, self._local_job(kind, local))
            if owner_objects.group_of(kind, local) is not None:
                indexed = jobs.store.by_index(JOBS_BY_WORKLOAD, key)
                names = list(dict.fromkeys([*names, *(name_of(o) for o in indexed)]))
            resource_kind = kind.resource.kind
            remote = owner_objects.remote_objects(
                kind,
                local,
                names,
                jobs.store,
                lambda job_key, cached: pending.view(view.name, resource_kind, job_key, cached),
            )
        workload = pending.view(view.name, WORKLOAD_KIND, key, caches.workloads.store.get(key))
        finished = kind is not None and self._remote_finished(kind, local, remote)
        return RemoteSlot(
            view.name,
            True,
            workload=workload,
            job=remote[0] if remote else None,
            job_finished=finished,
            jobs=tuple(remote),
        )

    def _remote_finished(self, kind: JobKind, local: Json, remote: list[Json]) -> bool:
        """Whether our copies show a final status (a pod group's: composed)."""
        if not remote:
            return False
        group = owner_objects.group_of(kind, local)
        if group is None:
            return kind.finished(remote[0]) is not None
        parts, name = group
        return kind.finished(parts.compose(namespace_of(local), name, remote)) is not None

    # -- doing --------------------------------------------------------------------------

    async def execute(self, snapshot: GroupSnapshot, steps: list[Step]) -> None:
        """Run the steps in order; a failed copy create or removal on one worker does not
        hold up the other workers (the pass still ends in a retry, and nothing is Settled).
        """
        key = snapshot.key
        local = snapshot.local
        wrote_status = False
        failed: list[str] = []
        for step in steps:
            if isinstance(step, RemoveRemote | CreateRemote):
                try:
                    if isinstance(step, RemoveRemote):
                        await self._remove(snapshot, step)
                    else:
                        await self._create(snapshot, step.cluster)
                except (KubeError, RetryNeeded) as error:
                    self.log.warning(
                        "multikueue.remote_write_failed",
                        workload=key,
                        cluster=step.cluster,
                        step=type(step).__name__,
                        error=str(error),
                    )
                    failed.append(step.cluster)
            elif isinstance(step, WriteStatus):
                updated = await self._write_status(local, step)
                wrote_status = updated is not None
                local = updated or local
            elif isinstance(step, Admitted):
                if wrote_status:
                    self._record_admission(key, local, step)
            elif isinstance(step, PatchRemotePriority):
                await self._patch_priority(snapshot, step.cluster)
            elif isinstance(step, DeactivateRemoteCopy):
                await self._deactivate(snapshot, step)
            elif isinstance(step, SyncJob):
                await self._sync_job(snapshot, step)
            elif isinstance(step, Dispatch):
                await self._dispatch(snapshot)
            elif isinstance(step, Requeue):
                self.queue.add_after(key, step.after_seconds)
            elif isinstance(step, RetryLater):
                raise RetryNeeded(step.why)
            elif isinstance(step, Settled) and not failed:
                self._settle(key, local)
        if failed:
            raise RetryNeeded(f"writes to {', '.join(sorted(set(failed)))} failed")

    def _settle(self, key: str, local: Json | None = None) -> None:
        owner = None if local is None else controller_owner(local)
        if local is not None and owner is not None:
            self.job_sync.forget(make_key(namespace_of(local), owner.name))
        self.dispatcher.forget(key)
        self.writes.forget(key)
        self._deleted.pop(key, None)
        if self.workloads.get(key) is None:
            self._written.pop(key, None)

    async def _write_status(self, local: Json, step: WriteStatus) -> Json | None:
        try:
            result = await write_status(
                self.client,
                WORKLOADS,
                dict(local),
                step.change,
                into=dict,
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return None
        if not result.written:
            return None
        key = object_key(result.object)
        self._written[key] = result.object
        self.log.info(
            "multikueue.status_written",
            workload=key,
            change=type(step.change).__name__,
            resource_version=resource_version_of(result.object),
        )
        return result.object

    def _record_admission(self, key: str, local: Json, step: Admitted) -> None:
        writes = self.writes.forget(key)
        self._waiting.discard(key)
        self.dispatcher.forget(key)  # placed: the dispatcher has nothing more to decide
        if self.metrics is None:
            return
        reserved = true_condition(local, Cond.QUOTA_RESERVED)
        latency = None
        if reserved is not None and reserved.since is not None:
            admitted_at = (
                step.admitted_at if step.admitted_at is not None else self.wall_clock().timestamp()
            )
            latency = admitted_at - reserved.since
        self.metrics.workload_admitted(cluster_queue(local), step.cluster, latency, writes)

    def _worker_client(self, cluster: str) -> KubeClient:
        connection = self.registry.connection(cluster)
        client = None if connection is None else connection.client
        if client is None:
            raise RetryNeeded(f"worker {cluster} is not connected")
        return client

    async def _remove(self, snapshot: GroupSnapshot, step: RemoveRemote) -> None:
        slot = snapshot.slot(step.cluster)
        if slot is None or not slot.holds_objects:
            return
        self.log.info(
            "multikueue.remove_copy", workload=snapshot.key, cluster=step.cluster, why=step.why
        )
        kind = self._owner_kind(snapshot.local)
        jobs = slot.jobs if kind is not None else ()
        if kind is not None and jobs and self._copy_shared(kind, snapshot, jobs[0]):
            jobs = ()  # a sibling Workload still runs in that copy (a LeaderWorkerSet)
        await self.writes.remove(
            self._worker_client(step.cluster),
            step.cluster,
            snapshot.key,
            workload=slot.workload,
            jobs=jobs,
            job_resource=kind.resource if kind is not None else None,
        )

    def _copy_shared(self, kind: JobKind, snapshot: GroupSnapshot, remote: Json) -> bool:
        """Whether another live manager Workload stands for the same remote copy."""
        stands_for = names_remote_workloads(kind)
        if stands_for is None:
            return False
        namespace = namespace_of(snapshot.local)
        for name in stands_for.remote_workload_names(remote):
            other = make_key(namespace, name)
            if other == snapshot.key:
                continue
            sibling = self.workloads.get(other)
            if sibling is not None and not is_deleting(sibling) and not is_finished(sibling):
                return True
        return False

    async def _create(self, snapshot: GroupSnapshot, cluster: str) -> None:
        created = await self.writes.create_workload(
            self._worker_client(cluster), cluster, snapshot.key, snapshot.local
        )
        if created and self.metrics is not None:
            self.metrics.copy_created(cluster_queue(snapshot.local), cluster)

    async def _patch_priority(self, snapshot: GroupSnapshot, cluster: str) -> None:
        slot = snapshot.slot(cluster)
        if slot is None or slot.workload is None:
            return
        await self.writes.patch_priority(
            self._worker_client(cluster), cluster, snapshot.key, slot.workload, snapshot.local
        )

    async def _deactivate(self, snapshot: GroupSnapshot, step: DeactivateRemoteCopy) -> None:
        slot = snapshot.slot(step.cluster)
        if slot is None or slot.workload is None:
            return
        await self.writes.write_remote_status(
            self._worker_client(step.cluster),
            step.cluster,
            snapshot.key,
            slot.workload,
            step.change,
        )

    async def _sync_job(self, snapshot: GroupSnapshot, step: SyncJob) -> None:
        slot = snapshot.slot(step.cluster)
        owner = controller_owner(snapshot.local)
        kind = self._owner_kind(snapshot.local)
        if slot is None or owner is None or kind is None:
            return
        local_job = self._local_job(kind, snapshot.local)
        if local_job is None:
            if step.final:
                return
            raise RetryNeeded("the owner job is not in the cache")
        outcome = JobSyncOutcome.IN_SYNC
        remote_by_name = {name_of(job): job for job in slot.jobs}
        for local_object in owner_objects.local_objects(kind, snapshot.local, local_job):
            result = await self.job_sync.sync(
                kind,
                worker=self._worker_client(step.cluster),
                cluster=step.cluster,
                key=snapshot.key,
                workload_name=snapshot.key.rpartition("/")[2],
                local_job=local_object,
                remote=remote_by_name.get(name_of(local_object)),
                final=step.final,
            )
            if result in (JobSyncOutcome.NAME_TAKEN, JobSyncOutcome.LOCAL_SUSPENDED):
                outcome = result
                break
        if outcome is JobSyncOutcome.NAME_TAKEN:
            # Never mark the workload placed where its job cannot run; never touch the
            # worker's own job either. Retried with backoff (as upstream) until it is gone.
            raise RetryNeeded(f"a job named {owner.name} on {step.cluster} is not ours")
        if outcome is JobSyncOutcome.LOCAL_SUSPENDED:
            if step.final and may_await_final_status(snapshot, slot):
                # The remote Job finished before the manager's Job controller started (or
                # before this cache saw it start) the local Job. Finishing now would remove
                # the remote copy and lose the Job's outcome: wait until the local Job runs,
                # copy, then finish. Bounded, for a local Job that never starts.
                raise RetryNeeded("the final Job status waits for the local Job to start")
            if not step.final:
                self.queue.add_after(snapshot.key, self.settings.local_suspended_retry_seconds)

    def _siblings(self, local: Json) -> list[Json] | None:
        """The other live Workloads of the same job when they must share its worker (a
        LeaderWorkerSet's groups, `sibling_placement`); None for any other kind."""
        kind = self._owner_kind(local)
        owner = controller_owner(local)
        if kind is None or owner is None or names_remote_workloads(kind) is None:
            return None
        key = object_key(local)
        return [
            w
            for w in self.workloads.list(namespace_of(local))
            if object_key(w) != key
            and not is_deleting(w)
            and not is_finished(w)
            and (facts := controller_owner(w)) is not None
            and facts.uid == owner.uid
            and facts.kind == owner.kind
        ]

    async def _dispatch(self, snapshot: GroupSnapshot) -> None:
        check = find_check(snapshot.local, snapshot.check)
        assert check is not None
        siblings = self._siblings(snapshot.local)
        if siblings is not None:
            placement = sibling_placement(snapshot.local, siblings)
            if placement.wait:
                return  # a sibling's placement brings it back (`_workload_seen`)
            if placement.cluster is not None:
                steps = plan_nomination(snapshot, (placement.cluster,), write=True)
                await self.execute(snapshot, steps)
                return
        request = DispatchRequest(
            key=snapshot.key,
            local=snapshot.local,
            workers=tuple(
                WorkerChoice(s.cluster, s.connected, s.workload is not None) for s in snapshot.slots
            ),
            nominated=tuple(
                str(n)
                for n in (snapshot.local.get("status") or {}).get("nominatedClusterNames") or ()
            ),
            now=snapshot.now,
        )
        nomination = await self.dispatcher.nominate(request)
        if nomination.recheck_after is not None:
            self.queue.add_after(snapshot.key, nomination.recheck_after)
        steps = plan_nomination(snapshot, nomination.names, write=nomination.write)
        await self.execute(snapshot, steps)
