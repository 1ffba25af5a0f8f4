"""Every write the hub sends to a worker, in one place, each one safe to repeat.

- a copy is created at most once: AlreadyExists means an earlier pass (or a crashed
  hub) already did it, or a same-named object that is not ours is there; either way
  nothing is overwritten;
- removals act only on objects taken from our origin-filtered caches, and delete with
  their UID as a precondition: a same-named object someone else created since (even
  one without our label) is never deleted. Our job goes first, then our Workload copy,
  after its `resource-in-use` finalizer is lifted (guarded by resourceVersion);
- updates are guarded by the resourceVersion they were computed on.
Every write is counted per worker and per workload (`writes_for`), for the metrics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from core.api.registry import kind_info
from core.kube.client import KubeClient, PatchType
from core.kube.errors import AlreadyExists, Conflict, NotFound
from core.kube.object_meta import name_of, namespace_of, object_key, resource_version_of, uid_of
from core.kube.resources import ResourceRef, resource_label
from core.kube.status_writer import ComputeStatus, write_status
from core.kube.write_counter import WriteVerb
from core.manager.field_manager import MULTIKUEUE_FIELD_MANAGER
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics
from hub.multikueue.dispatch.pending_writes import PendingWrites
from hub.multikueue.dispatch.remote_copy import is_ours, priority_patch, remote_workload
from hub.multikueue.dispatch.workload_facts import Json, metadata
from integrations.framework.job_kind import JobResource
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL, RESOURCE_IN_USE_FINALIZER

WORKLOADS = kind_info("Workload")
WORKLOAD_KIND = "Workload"


class RemoteWrites:
    """Writes to workers for the dispatch (see module docstring)."""

    def __init__(
        self,
        origin: str,
        metrics: DispatchMetrics | None = None,
        pending: PendingWrites | None = None,
    ) -> None:
        self.origin = origin
        self.metrics = metrics
        self.pending = pending or PendingWrites()
        self._per_workload: Counter[str] = Counter()
        self.log = structlog.get_logger("hub.multikueue.dispatch")

    def writes_for(self, key: str) -> int:
        return self._per_workload[key]

    def forget(self, key: str) -> int:
        """Stop counting for a workload; the writes counted so far."""
        return self._per_workload.pop(key, 0)

    def _count(self, cluster: str, key: str, verb: WriteVerb, n: int = 1) -> None:
        if n <= 0:
            return
        self._per_workload[key] += n
        if self.metrics is not None:
            for _ in range(n):
                self.metrics.remote_write(cluster, verb)

    # -- Workload copies ------------------------------------------------------------------

    async def create_workload(
        self, client: KubeClient, cluster: str, key: str, local: Json
    ) -> bool:
        """Create our copy of `local`; False when something of that name is already there."""
        self._count(cluster, key, WriteVerb.CREATE)
        try:
            created = await client.create(
                WORKLOADS,
                remote_workload(local, self.origin),
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except AlreadyExists:
            self.log.info("multikueue.copy_exists", cluster=cluster, workload=key)
            return False
        self.pending.created(cluster, WORKLOAD_KIND, key, created)
        self.log.info("multikueue.copy_created", cluster=cluster, workload=key)
        return True

    async def patch_priority(
        self, client: KubeClient, cluster: str, key: str, remote: Json, local: Json
    ) -> None:
        body = priority_patch(local)
        body["metadata"] = {"resourceVersion": resource_version_of(remote)}
        self._count(cluster, key, WriteVerb.PATCH)
        await client.patch(
            WORKLOADS,
            name_of(remote),
            body,
            patch_type=PatchType.MERGE,
            namespace=namespace_of(remote),
            field_manager=MULTIKUEUE_FIELD_MANAGER,
        )

    async def write_remote_status(
        self, client: KubeClient, cluster: str, key: str, remote: Json, change: ComputeStatus[Any]
    ) -> None:
        try:
            result = await write_status(
                client,
                WORKLOADS,
                dict(remote),
                change,
                into=dict,
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return
        self._count(cluster, key, WriteVerb.PATCH, result.conflicts + int(result.written))

    # -- removal ----------------------------------------------------------------------------

    async def remove(
        self,
        client: KubeClient,
        cluster: str,
        key: str,
        *,
        workload: Json | None,
        jobs: Sequence[Json],
        job_resource: JobResource | None,
    ) -> None:
        """Remove our job's objects (of `job_resource`'s kind: one, or a pod group's Pods),
        then our Workload copy (None: none)."""
        if job_resource is not None:
            for job in jobs:
                await self._delete(client, cluster, key, job_resource, job, kind=job_resource.kind)
        if workload is None:
            return
        if not is_ours(workload, self.origin):  # the caches hold only ours; never trust blindly
            self.log.error("multikueue.refused_foreign_delete", cluster=cluster, workload=key)
            return
        finalizers = list(metadata(workload).get("finalizers") or ())
        if RESOURCE_IN_USE_FINALIZER in finalizers:
            rest = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
            self._count(cluster, key, WriteVerb.PATCH)
            try:
                workload = await client.patch(
                    WORKLOADS,
                    name_of(workload),
                    {
                        "metadata": {
                            "resourceVersion": resource_version_of(workload),
                            "uid": uid_of(workload),
                            "finalizers": rest or None,
                        }
                    },
                    patch_type=PatchType.MERGE,
                    namespace=namespace_of(workload),
                    field_manager=MULTIKUEUE_FIELD_MANAGER,
                )
            except NotFound:
                return
        await self._delete(client, cluster, key, WORKLOADS, workload, kind=WORKLOAD_KIND)
        self.log.info("multikueue.copy_removed", cluster=cluster, workload=key)

    async def _delete(
        self,
        client: KubeClient,
        cluster: str,
        key: str,
        resource: ResourceRef,
        obj: Mapping[str, Any],
        *,
        kind: str,
    ) -> None:
        if not is_ours(obj, self.origin):
            self.log.error(
                "multikueue.refused_foreign_delete",
                cluster=cluster,
                resource=resource_label(resource),
                name=name_of(obj),
            )
            return
        self._count(cluster, key, WriteVerb.DELETE)
        try:
            await client.delete(
                resource,
                name_of(obj),
                namespace=namespace_of(obj),
                propagation_policy="Background",
                precondition_uid=uid_of(obj) or None,
            )
        except NotFound:
            pass
        except Conflict:
            # The UID precondition failed: the name now belongs to another object.
            self.log.info("multikueue.delete_skipped_replaced", cluster=cluster, name=name_of(obj))
            return
        self.pending.deleted(cluster, kind, object_key(obj), uid_of(obj))

    # -- jobs ---------------------------------------------------------------------------------

    async def _ours_already(self, client: KubeClient, resource: ResourceRef, body: Json) -> bool:
        try:
            existing = await client.get(resource, name_of(body), namespace=namespace_of(body))
        except NotFound:
            return False
        wanted = (metadata(body).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL)
        labels = metadata(existing).get("labels") or {}
        return is_ours(existing, self.origin) and labels.get(PREBUILT_WORKLOAD_LABEL) == wanted

    async def patch_job(
        self,
        client: KubeClient,
        cluster: str,
        key: str,
        resource: JobResource,
        remote: Json,
        patch: Mapping[str, Any],
    ) -> None:
        """Merge-patch the remote job, guarded by the version it was planned on."""
        body: dict[str, Any] = dict(patch)
        body["metadata"] = {"resourceVersion": resource_version_of(remote)}
        self._count(cluster, key, WriteVerb.PATCH)
        await client.patch(
            resource,
            name_of(remote),
            body,
            patch_type=PatchType.MERGE,
            namespace=namespace_of(remote),
            field_manager=MULTIKUEUE_FIELD_MANAGER,
        )
        self.log.info("multikueue.job_spec_forwarded", cluster=cluster, workload=key)

    async def create_job(
        self, client: KubeClient, cluster: str, key: str, resource: JobResource, body: Json
    ) -> bool:
        self._count(cluster, key, WriteVerb.CREATE)
        try:
            created = await client.create(
                resource, dict(body), field_manager=MULTIKUEUE_FIELD_MANAGER
            )
        except AlreadyExists:
            if await self._ours_already(client, resource, body):
                return True  # created by an earlier pass; the cache has not caught up
            self.log.warning(
                "multikueue.job_name_taken",
                cluster=cluster,
                workload=key,
                job=f"{namespace_of(body)}/{name_of(body)}",
                hint="a job of that name exists on the worker and is not ours; it is left alone",
            )
            return False
        self.pending.created(cluster, resource.kind, object_key(created), created)
        self.log.info("multikueue.job_created", cluster=cluster, workload=key, job=name_of(body))
        return True
