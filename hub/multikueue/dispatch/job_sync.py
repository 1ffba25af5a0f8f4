"""The owner job across clusters: created on the admitting worker, its status copied back.

Any registered kind: the kind (`JobKind.remote_job`, `JobKind.remote_status_sync`) builds
the remote job and decides whether its status may be copied; an owner of no enabled kind
gets `Rejected` before it reaches here. The remote job is created from the manager's job
as it is then (still suspended, carrying the prebuilt-workload label) and the worker's
Kueue adopts the copy of the Workload and starts it. Its status is copied onto the manager
job's status subresource, guarded by resourceVersion, with keys the remote no longer has
removed; while the manager job is still suspended the copy waits (the kind's rule) and the
caller retries shortly. A kind that forwards spec edits (`SyncsRemoteSpec`, a RayService's
serveConfigV2) has its copy merge-patched after the status copy.
"""

from __future__ import annotations

import enum
from typing import Any

import structlog

from core.kube.client import KubeClient
from core.kube.errors import Invalid, NotFound
from core.kube.object_meta import object_key, resource_version_of, uid_of
from core.kube.status_writer import write_status
from core.manager.field_manager import MULTIKUEUE_FIELD_MANAGER
from hub.multikueue.dispatch.remote_writes import RemoteWrites
from hub.multikueue.dispatch.workload_facts import Json
from integrations.framework.job_kind import JobKind, StatusSyncDecision
from integrations.framework.remote_spec_sync import SyncsRemoteSpec


class JobSyncOutcome(enum.Enum):
    CREATED = "created"
    COPIED = "copied"
    IN_SYNC = "in-sync"
    LOCAL_SUSPENDED = "local-suspended"
    """The manager Job is still suspended: try again shortly."""
    SKIPPED = "skipped"
    """Nothing to do (not managed by MultiKueue, or no remote job on a final sync)."""
    NAME_TAKEN = "name-taken"
    """A job of that name that is not ours is on the worker: ours cannot be created."""


def status_replacement(current: Json, wanted: Json) -> dict[str, Any]:
    """A merge patch for `status` that makes it equal `wanted` (absent keys removed).

    Nested maps merge in a merge patch, so their absent keys are removed too: a finished
    remote Job's `uncountedTerminatedPods: {}` must clear the UIDs an earlier copy wrote,
    or the apiserver rejects the finished Job's status.
    """
    patch: dict[str, Any] = {name: None for name in current if name not in wanted}
    for name, value in wanted.items():
        old = current.get(name)
        if isinstance(value, dict) and isinstance(old, dict):
            patch[name] = status_replacement(old, value)
        else:
            patch[name] = value
    return patch


class JobSync:
    def __init__(self, manager: KubeClient, writes: RemoteWrites) -> None:
        self.manager = manager
        self.writes = writes
        self._written: dict[str, Json] = {}
        """The manager Jobs as our last status write left them (newer than the cache)."""

    def _freshest(self, cached: Json) -> Json:
        key = object_key(cached)
        written = self._written.get(key)
        if written is None:
            return cached
        cached_version, written_version = resource_version_of(cached), resource_version_of(written)
        if (
            uid_of(written) == uid_of(cached)
            and cached_version.isdigit()
            and written_version.isdigit()
            and int(written_version) > int(cached_version)
        ):
            return written
        del self._written[key]
        return cached

    def forget(self, job_key: str) -> None:
        self._written.pop(job_key, None)

    async def sync(
        self,
        kind: JobKind,
        *,
        worker: KubeClient,
        cluster: str,
        key: str,
        workload_name: str,
        local_job: Json,
        remote: Json | None,
        final: bool,
    ) -> JobSyncOutcome:
        if remote is None:
            if final:
                return JobSyncOutcome.SKIPPED
            body = kind.remote_job(
                local_job, workload_name=workload_name, origin=self.writes.origin
            )
            created = await self.writes.create_job(worker, cluster, key, kind.resource, body)
            return JobSyncOutcome.CREATED if created else JobSyncOutcome.NAME_TAKEN
        outcome = await self.copy_status(kind, local_job, remote)
        if not final and isinstance(kind, SyncsRemoteSpec):
            patch = kind.remote_spec_patch(self._freshest(local_job), remote)
            if patch:
                await self.writes.patch_job(worker, cluster, key, kind.resource, remote, patch)
        return outcome

    async def copy_status(self, kind: JobKind, local_job: Json, remote: Json) -> JobSyncOutcome:
        local_job = self._freshest(local_job)
        decision = kind.remote_status_sync(local_job, remote).decision
        if decision is StatusSyncDecision.NOT_MANAGED:
            return JobSyncOutcome.SKIPPED
        if decision is StatusSyncDecision.LOCAL_SUSPENDED:
            return JobSyncOutcome.LOCAL_SUSPENDED
        if decision is StatusSyncDecision.IN_SYNC:
            return JobSyncOutcome.IN_SYNC

        planned: list[tuple[Json, Json]] = []

        def compute(current: dict[str, Any]) -> dict[str, Any] | None:
            sync = kind.remote_status_sync(current, remote)
            if sync.decision is not StatusSyncDecision.COPY or sync.status is None:
                return None
            planned.append((current, sync.status))
            return status_replacement(current.get("status") or {}, sync.status)

        try:
            result = await write_status(
                self.manager,
                kind.resource,
                dict(local_job),
                compute,
                into=dict,
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return JobSyncOutcome.SKIPPED
        except Invalid:
            # Refused by the manager's Job validation: say from what to what, so the case
            # can be understood; the caller retries with backoff from fresh caches.
            current, wanted = planned[-1] if planned else ({}, {})
            structlog.get_logger("hub.multikueue.dispatch").warning(
                "multikueue.job_status_refused",
                job=object_key(local_job),
                resource_version=resource_version_of(current),
                local_status=current.get("status"),
                remote_status=wanted,
                remote_resource_version=resource_version_of(remote),
            )
            raise
        if not result.written:
            return JobSyncOutcome.IN_SYNC
        self._written[object_key(result.object)] = result.object
        return JobSyncOutcome.COPIED
