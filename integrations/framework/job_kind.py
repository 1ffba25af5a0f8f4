"""The contract a job kind implements so the manager can queue it: `JobKind`.

Upstream Kueue adds a kind with a `GenericJob`, a `MultiKueueAdapter` and one
`RegisterIntegration` line; this is the same seam in Python. A kind is a stateless object
whose methods are pure: jobs go in and out as plain dicts (their JSON shape, so fields
fleetq does not model pass through untouched), Kueue objects as `core.api` structs. The
manager's generic machinery (`core.manager.job_controller`, the webhook server, the
MultiKueue job sync and garbage collector, the informers) does every read and write and
asks the kind only what is specific to it.

What is the same for every kind lives in this package and a kind reuses it:
`job_metadata` (queue name, prebuilt Workload, priority class, managedBy, suspend),
`workload_builder` (name, owner, labels, priority of the Workload around the kind's pod
sets), `workload_matching`, `job_defaulting` and `job_validation` (upstream's
jobframework webhook rules), `multikueue_copy` (the remote copy and its status).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.field_errors import FieldError
from core.api.workload import PodSet, ReclaimablePod, Workload
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_metadata import Job
from integrations.framework.json_patch import JsonPatchOp
from integrations.framework.webhook_context import WebhookContext


@dataclass(frozen=True, slots=True)
class JobResource:
    """The REST collection and type of a job kind (a `core.kube.resources.ResourceRef`)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvk(self) -> tuple[str, str]:
        """(apiVersion, kind), as an ownerReference names it."""
        return self.api_version, self.kind


@dataclass(frozen=True, slots=True)
class JobFinish:
    """How a job ended: the Workload's Finished reason and message."""

    reason: WorkloadReason
    message: str

    @property
    def succeeded(self) -> bool:
        return self.reason is WorkloadReason.SUCCEEDED


class JobSubresource(enum.StrEnum):
    """Where a write goes: the job itself or its status subresource."""

    MAIN = ""
    STATUS = "status"


@dataclass(frozen=True, slots=True)
class JobWrite:
    """One write of a plan: the patch, and the job as it is once the write is done."""

    subresource: JobSubresource
    patch: list[JsonPatchOp]
    job: dict[str, Any]


class StatusSyncDecision(enum.Enum):
    """What to do with a remote job's status."""

    COPY = "copy"
    """Write `status` onto the local job's status subresource."""
    NOT_MANAGED = "not-managed"
    """The local job is not managed by MultiKueue: its status is not ours to write."""
    LOCAL_SUSPENDED = "local-suspended"
    """The local job is not unsuspended yet; try again once it is."""
    IN_SYNC = "in-sync"
    """The local status already equals the remote one: nothing to write."""


@dataclass(frozen=True, slots=True)
class StatusSync:
    decision: StatusSyncDecision
    status: dict[str, Any] | None = None
    """With COPY: the local job's status to write."""


class JobKind(Protocol):
    """One kind of job the manager queues (see module docstring).

    Every method is pure and must not raise on a malformed job except where it says so;
    the generic machinery turns those errors into Events and Workload conditions.
    """

    @property
    def framework(self) -> str:
        """Upstream's integration name, as the Configuration's `integrations.frameworks`
        spells it: `batch/job`, `jobset.x-k8s.io/jobset`, ..."""
        ...

    @property
    def resource(self) -> JobResource:
        """The job's REST collection and type."""
        ...

    @property
    def own_controller_name(self) -> str:
        """`spec.managedBy` meaning "the kind's own controller" (same as unset)."""
        ...

    @property
    def pod_name_labels(self) -> tuple[str, ...]:
        """Labels whose value is the job's name on every pod it runs, first preferred
        (how `fleetq logs` finds a job's pods on a worker)."""
        ...

    @property
    def child_kinds(self) -> tuple[tuple[str, str], ...]:
        """(API group, kind) of objects this kind creates and queues as part of itself
        (a JobSet's Jobs): those are never queued on their own."""
        ...

    # -- reading -------------------------------------------------------------------------
    def is_suspended(self, job: Job) -> bool:
        """Suspended, and not half-way through a stop the manager must finish."""
        ...

    def managed_by(self, job: Job) -> str | None:
        """The controller the job names in `spec.managedBy` (None: unset)."""
        ...

    # -- Workload ------------------------------------------------------------------------
    def pod_sets(self, job: Job) -> list[PodSet]:
        """The job's pod sets as they are now, in upstream's names and order.

        Raises `InvalidTopologyRequest` when a topology annotation cannot be read."""
        ...

    def expected_running_pod_sets(
        self, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[PodSet] | None:
        """The pod sets as the started job should show them under `workload`'s admission;
        None without a usable admission (see `workload_matching.admitted_pod_sets`)."""
        ...

    # -- running -------------------------------------------------------------------------
    def start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> dict[str, Any]:
        """The job unsuspended on `workload`'s admission (flavors' node labels and
        tolerations, podSetUpdates, counts); raises `InvalidPodSetInfo` when the admission
        cannot be applied."""
        ...

    def plan_stop(self, job: Job, workload: Workload | None) -> list[JobWrite]:
        """The writes, in order, that suspend the job and restore its pod templates to
        what `workload` recorded (empty when it is stopped already)."""
        ...

    def finished(self, job: Job) -> JobFinish | None:
        """How the job ended, or None while it has not."""
        ...

    def is_active(self, job: Job) -> bool:
        """Whether any pod of the job may still run (a stop waits for none to)."""
        ...

    def pods_ready(self, job: Job) -> bool:
        """Whether every pod the job needs is ready (waitForPodsReady)."""
        ...

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        """Pods per pod set whose quota the job no longer needs."""
        ...

    # -- webhook -------------------------------------------------------------------------
    def default(self, job: Job, ctx: WebhookContext) -> dict[str, Any]:
        """The job as the defaulting webhook leaves it on create."""
        ...

    def validate_create(self, job: Job, ctx: WebhookContext) -> list[FieldError]:
        """Errors that reject creating `job`."""
        ...

    def validate_update(self, old: Job, new: Job, ctx: WebhookContext) -> list[FieldError]:
        """Errors that reject changing `old` into `new`."""
        ...

    # -- MultiKueue ----------------------------------------------------------------------
    def remote_job(self, local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
        """The job to create on a worker for `local`, dispatched under `workload_name`."""
        ...

    def remote_status_sync(self, local: Job, remote: Job) -> StatusSync:
        """Whether and what to copy from the worker's job onto the manager's job."""
        ...


@runtime_checkable
class SupportsPodPriorityClass(Protocol):
    """Optional: a kind that names its pods' PriorityClass somewhere other than its pod
    templates (Kubeflow's `runPolicy.schedulingPolicy.priorityClass`). Without it the
    Workload builder takes the first pod set's template that names one."""

    def pod_priority_class_name(self, job: Job) -> str:
        """The scheduling.k8s.io PriorityClass the job's pods run at ('' for none)."""
        ...
