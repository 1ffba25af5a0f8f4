"""The writes the job controller makes, each guarded by the resourceVersion it was planned on.

Jobs (of the controller's kind) are changed with JSON patches computed by the kind (start,
the stop plan) plus a replace of `/metadata/resourceVersion`, which makes the apiserver
apply the patch only to the version it was computed from; any other version fails with
Conflict and the controller plans again from its cache. Workloads are created from
`build_workload`, updated in place (queue name, or a whole spec rebuilt from an edited
suspended job) and deleted after their finalizer is dropped. Every write also records an
Event on the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.api.codec import to_builtins
from core.api.json_types import Json
from core.api.workload import Workload, WorkloadSpec
from core.kube.client import KubeClient, PatchType
from core.kube.errors import AlreadyExists, NotFound
from core.kube.events import EventRecorder, EventType
from core.kube.object_meta import name_of, namespace_of, object_key, resource_version_of, uid_of
from core.manager import watched_kinds as kinds
from core.manager.event_reasons import EventReason, reference
from core.manager.field_manager import FIELD_MANAGER
from core.manager.finalizers import set_finalizer
from integrations.framework.job_kind import JobResource, JobSubresource, JobWrite
from integrations.framework.json_patch import JsonPatchOp
from integrations.framework.labels import RESOURCE_IN_USE_FINALIZER


def guarded(version: str, ops: Sequence[JsonPatchOp]) -> list[dict[str, Any]]:
    """A JSON patch that applies only to the object at `version`."""
    guard: dict[str, Any] = {"op": "replace", "path": "/metadata/resourceVersion", "value": version}
    return [guard, *(dict(op) for op in ops)]


class JobActions:
    """Writes on Jobs and their Workloads (see module docstring)."""

    def __init__(
        self, resource: JobResource, client: KubeClient, events: EventRecorder | None = None
    ) -> None:
        self.resource = resource
        self.client = client
        self.events = events

    def _event(self, job: Json, reason: EventReason, note: str, *, warning: bool = False) -> None:
        if self.events is not None:
            self.events.record(
                reference(job, self.resource, self.resource.kind),
                reason,
                note,
                type=EventType.WARNING if warning else EventType.NORMAL,
            )

    def warn(self, job: Json, reason: EventReason, note: str) -> None:
        self._event(job, reason, note, warning=True)

    def note(self, obj: Json, reason: EventReason, note: str) -> None:
        """A Normal event on `obj` (a job, or a member of a composed job)."""
        self._event(obj, reason, note)

    # -- jobs ----------------------------------------------------------------------------
    async def patch_job(
        self, job: Json, ops: Sequence[JsonPatchOp], subresource: str | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.client.patch(
            self.resource,
            name_of(job),
            guarded(resource_version_of(job), ops),
            patch_type=PatchType.JSON,
            namespace=namespace_of(job),
            subresource=subresource,
            field_manager=FIELD_MANAGER,
        )
        return result

    async def start(self, job: Json, ops: Sequence[JsonPatchOp], cluster_queue: str) -> None:
        await self.patch_job(job, ops)
        self._event(job, EventReason.STARTED, f"Admitted by clusterQueue {cluster_queue}")

    async def start_in_steps(
        self, job: Json, writes: Sequence[JobWrite], cluster_queue: str
    ) -> Json:
        """Run a kind's start plan in order (`StartsInSteps`); the Job as it is left."""
        current = await self._run(job, writes)
        self._event(job, EventReason.STARTED, f"Admitted by clusterQueue {cluster_queue}")
        return current

    async def _run(self, job: Json, writes: Sequence[JobWrite]) -> Json:
        current: Json = job
        for write in writes:
            subresource = None if write.subresource is JobSubresource.MAIN else "status"
            current = await self.patch_job(current, write.patch, subresource)
        return current

    async def stop(self, job: Json, writes: Sequence[JobWrite], why: str) -> Json:
        """Run a stop plan in order; returns the Job as the last write left it."""
        current = await self._run(job, writes)
        if writes:
            self._event(job, EventReason.STOPPED, why)
        return current

    async def delete_job(self, job: Json) -> None:
        """Delete the job (a kind that `StopsByDeletion`), guarded by its UID."""
        try:
            await self.client.delete(
                self.resource,
                name_of(job),
                namespace=namespace_of(job),
                precondition_uid=uid_of(job) or None,
            )
        except NotFound:
            return

    async def release_job(self, job: Json, finalizer: str) -> None:
        """Drop the kind's own finalizer from the job (a kind that `HoldsJobFinalizer`)."""
        await set_finalizer(
            self.client, self.resource, job, finalizer, present=False, field_manager=FIELD_MANAGER
        )

    # -- workloads -----------------------------------------------------------------------
    async def create_workload(self, job: Json, workload: Workload) -> None:
        try:
            await self.client.create(kinds.WORKLOADS, workload, field_manager=FIELD_MANAGER)
        except AlreadyExists:
            return  # created by an earlier reconcile; the informer will bring it
        namespace = workload.metadata.namespace
        self._event(
            job,
            EventReason.CREATED_WORKLOAD,
            f"Created Workload: {namespace}/{workload.metadata.name}",
        )

    async def replace_workload_spec(self, job: Json, workload: Json, spec: WorkloadSpec) -> None:
        body = dict(workload)
        body["spec"] = to_builtins(spec)
        await self.client.replace(
            kinds.WORKLOADS,
            name_of(workload),
            body,
            namespace=namespace_of(workload),
            field_manager=FIELD_MANAGER,
        )
        self._event(
            job,
            EventReason.UPDATED_WORKLOAD,
            f"Updated not matching Workload for suspended job: {object_key(workload)}",
        )

    async def resize_workload(self, job: Json, workload: Json, counts: dict[str, int]) -> None:
        """Set an elastic job's Workload slice's pod counts (a scale-down, or a slice not
        yet holding quota), guarded by the version it was planned on."""
        ops: list[JsonPatchOp] = []
        for index, pod_set in enumerate((workload.get("spec") or {}).get("podSets") or ()):
            wanted = counts.get(str(pod_set.get("name")))
            if wanted is not None and wanted != pod_set.get("count"):
                path = f"/spec/podSets/{index}/count"
                ops.append({"op": "replace", "path": path, "value": wanted})
        if not ops:
            return
        await self.client.patch(
            kinds.WORKLOADS,
            name_of(workload),
            guarded(resource_version_of(workload), ops),
            patch_type=PatchType.JSON,
            namespace=namespace_of(workload),
            field_manager=FIELD_MANAGER,
        )
        self._event(
            job,
            EventReason.UPDATED_WORKLOAD,
            f"Resized Workload slice {object_key(workload)}: {counts}",
        )

    async def set_workload_priority(self, workload: Json, class_name: str, value: int) -> None:
        """Point the Workload at another WorkloadPriorityClass, with that class's value."""
        await self.client.patch(
            kinds.WORKLOADS,
            name_of(workload),
            {
                "metadata": {"resourceVersion": resource_version_of(workload)},
                "spec": {"priorityClassRef": {"name": class_name}, "priority": value},
            },
            patch_type=PatchType.MERGE,
            namespace=namespace_of(workload),
            field_manager=FIELD_MANAGER,
        )

    async def set_workload_queue(self, workload: Json, queue_name: str) -> None:
        await self.client.patch(
            kinds.WORKLOADS,
            name_of(workload),
            {
                "metadata": {"resourceVersion": resource_version_of(workload)},
                "spec": {"queueName": queue_name},
            },
            patch_type=PatchType.MERGE,
            namespace=namespace_of(workload),
            field_manager=FIELD_MANAGER,
        )

    async def adopt_workload(self, workload: Json, adopted: Workload) -> None:
        """Write the owner reference (and job-uid label) of a prebuilt Workload just adopted."""
        await self.client.patch(
            kinds.WORKLOADS,
            name_of(workload),
            {
                "metadata": {
                    "resourceVersion": resource_version_of(workload),
                    "labels": dict(adopted.metadata.labels),
                    "ownerReferences": [to_builtins(r) for r in adopted.metadata.owner_references],
                }
            },
            patch_type=PatchType.MERGE,
            namespace=namespace_of(workload),
            field_manager=FIELD_MANAGER,
        )

    async def release_workload(self, workload: Json) -> Json | None:
        """Drop the resource-in-use finalizer so the Workload can go away; returns the
        Workload written (None: it held no finalizer, or is gone)."""
        return await set_finalizer(
            self.client,
            kinds.WORKLOADS,
            workload,
            RESOURCE_IN_USE_FINALIZER,
            present=False,
            field_manager=FIELD_MANAGER,
        )

    async def delete_workload(self, job: Json | None, workload: Json) -> None:
        """Delete the Workload at the version the decision was made on: one changed since
        (the garbage collector taking its owner reference away, its job deleted with
        orphan propagation) raises Conflict, so the job is planned again from the newer
        version rather than losing a Workload that must outlive it."""
        released = await self.release_workload(workload)
        decided_on = released if released is not None else workload
        try:
            await self.client.delete(
                kinds.WORKLOADS,
                name_of(workload),
                namespace=namespace_of(workload),
                precondition_uid=uid_of(workload) or None,
                precondition_resource_version=resource_version_of(decided_on) or None,
            )
        except NotFound:
            return
        if job is not None:
            self._event(
                job,
                EventReason.DELETED_WORKLOAD,
                f"Deleted not matching Workload: {object_key(workload)}",
            )
