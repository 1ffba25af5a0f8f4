"""Optional capabilities a job kind may have beyond `JobKind`, checked with `isinstance`.

Most kinds are Job-like: a spec.suspend to flip, a template to restore, an object that
stays. Some are not (a plain Pod cannot be suspended, only held back by a scheduling gate,
and a stopped one is deleted), and upstream gives its GenericJob optional interfaces for
them (JobWithSkip, JobWithFinalize, JobWithCustomStop). These are the same idea: small
separate Protocols a kind implements only when it needs them, so no other kind changes.
The generic machinery (`core.manager.job_controller`, the webhook configurations, the
chart generator) asks `isinstance(kind, X)` and behaves as before when the answer is no.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from core.api.meta import OwnerReference
from core.api.workload import Workload
from integrations.framework.job_metadata import Job

_K = TypeVar("_K")


@runtime_checkable
class SkipsJobs(Protocol):
    """Some objects of the kind are not Kueue's even with a queue name (upstream's
    JobWithSkip): a Pod the webhook did not mark `kueue.x-k8s.io/managed=true`."""

    def skip(self, job: Job) -> bool:
        """True: the job controller leaves this object alone entirely."""
        ...


@runtime_checkable
class HoldsJobFinalizer(Protocol):
    """The kind's webhook puts a finalizer on the job itself (upstream's JobWithFinalize),
    so its end is seen even if the object is deleted at once (a Pod)."""

    @property
    def job_finalizer(self) -> str:
        """The finalizer the job controller removes once the job's Workload is Finished,
        the job is being deleted (after its Workloads are finished and released), or the
        job finished without a Workload."""
        ...


@runtime_checkable
class StopsByDeletion(Protocol):
    """A stopped job is deleted after its `plan_stop` writes (upstream's Pod Stop), for
    kinds that cannot be suspended once they run."""

    @property
    def stops_by_deletion(self) -> bool: ...


@runtime_checkable
class ChildOfEveryKind(Protocol):
    """Objects every job kind creates (Pods): one whose controller owner is another
    enabled kind is queued with that owner (its Workload covers it), never on its own."""

    @property
    def child_of_every_kind(self) -> bool: ...


@runtime_checkable
class WebhooksInManagedNamespacesOnly(Protocol):
    """The kind's webhooks are registered only for the namespaces the Configuration's
    `managedJobsNamespaceSelector` selects (upstream's Pod webhooks, which sit in the path
    of every pod the cluster creates), besides never in the hub's own or kube-system."""

    @property
    def webhooks_in_managed_namespaces_only(self) -> bool: ...


@runtime_checkable
class DefaultsOnUpdate(Protocol):
    """The kind's defaulting webhook answers updates too, not only creates (upstream
    registers Deployment, StatefulSet and LeaderWorkerSet defaulting for create;update):
    a queue name or priority class changed on the object reaches its pod template."""

    @property
    def defaults_on_update(self) -> bool: ...


def defaults_on_update(kind: object) -> bool:
    return isinstance(kind, DefaultsOnUpdate) and kind.defaults_on_update


def defaulting_operations(kind: object) -> list[str]:
    """The operations the kind's mutating webhook is registered for."""
    return ["CREATE", "UPDATE"] if defaults_on_update(kind) else ["CREATE"]


def skips(kind: object, job: Job) -> bool:
    return isinstance(kind, SkipsJobs) and kind.skip(job)


def job_finalizer_of(kind: object) -> str | None:
    return kind.job_finalizer if isinstance(kind, HoldsJobFinalizer) else None


def stops_by_deletion(kind: object) -> bool:
    return isinstance(kind, StopsByDeletion) and kind.stops_by_deletion


def is_child_of_every_kind(kind: object) -> bool:
    return isinstance(kind, ChildOfEveryKind) and kind.child_of_every_kind


def webhooks_in_managed_namespaces_only(kind: object) -> bool:
    return (
        isinstance(kind, WebhooksInManagedNamespacesOnly)
        and kind.webhooks_in_managed_namespaces_only
    )


@runtime_checkable
class LocalOnly(Protocol):
    """MultiKueue never dispatches the kind: the hub keeps no remote caches of it and
    join grants the MultiKueue identity no rights on it (fleetq's plain Pods)."""

    @property
    def local_only(self) -> bool: ...


def is_local_only(kind: object) -> bool:
    return isinstance(kind, LocalOnly) and kind.local_only


def dispatchable(kinds: Iterable[_K]) -> tuple[_K, ...]:
    """The kinds MultiKueue dispatches (neither `LocalOnly` nor `WebhookOnly`)."""
    return tuple(kind for kind in kinds if not is_local_only(kind) and not is_webhook_only(kind))


@runtime_checkable
class WebhookOnly(Protocol):
    """Objects of the kind are never queued themselves; only its webhooks run (upstream's
    NoopReconciler: a Deployment, whose pods are queued as plain Pods). The manager keeps
    no cache and runs no job controller for it, and MultiKueue never dispatches it."""

    @property
    def webhook_only(self) -> bool: ...


@runtime_checkable
class ImpliesFrameworks(Protocol):
    """Enabling the kind enables these frameworks too (upstream enables the `pod`
    integration implicitly with `deployment` or `statefulset`)."""

    @property
    def implied_frameworks(self) -> tuple[str, ...]: ...


def is_webhook_only(kind: object) -> bool:
    return isinstance(kind, WebhookOnly) and kind.webhook_only


def implied_frameworks(kind: object) -> tuple[str, ...]:
    return kind.implied_frameworks if isinstance(kind, ImpliesFrameworks) else ()


def reconciled(kinds: Iterable[_K]) -> tuple[_K, ...]:
    """The kinds the manager caches and runs a job controller for (not `WebhookOnly`)."""
    return tuple(kind for kind in kinds if not is_webhook_only(kind))


class IncompleteJob(Exception):
    """A composed job is not whole yet (a pod group with fewer Pods than its total count):
    no Workload is built for it until it is; the next member's arrival tries again."""


@dataclass(frozen=True, slots=True)
class ComposedMatch:
    """How a composed job's members stand to its Workload (upstream's pod-group
    FindMatchingWorkloads), or, without a Workload yet, to the one about to be built."""

    equivalent: bool
    """The Workload still stands for the members (False: delete it, build anew)."""
    kept: tuple[dict[str, Any], ...] = ()
    """The members the composed job goes on with (it is composed again from them)."""
    excess: tuple[dict[str, Any], ...] = ()
    """Members beyond what the Workload counts: their finalizer comes off, they are
    deleted."""
    released: tuple[dict[str, Any], ...] = ()
    """Members that count no more (failed ones a replacement stands in for): their
    finalizer comes off."""
    absent: int = 0
    """Pods the Workload counts that are not there (WaitingForReplacementPods)."""
    new_owners: tuple[OwnerReference, ...] = ()
    """Owner references the Workload lacks (members that joined later: replacements)."""
    problem: str | None = None
    """Why the members cannot make one Workload (they disagree on its queue, say): a
    warning on the job, and no Workload until it is fixed."""


@runtime_checkable
class ComposedJobs(Protocol):
    """Some jobs of the kind span several objects (upstream's ComposableJob: a pod group).

    The job controller reconciles each such set as one composed job under the key
    `<namespace>/<name>#composed`: `compose` turns the members into one job dict that
    every `JobKind` method takes, and each write the kind plans on the composed job is
    made member by member (`members_of` before and after). Its Workload is built as for
    any job and then given its name and owners by `composed_workload`, unless its
    members name a prebuilt Workload (`prebuilt_workload_matches` then decides whether
    that one still stands for them)."""

    def composed_name(self, obj: Job) -> str | None:
        """The composed job `obj` belongs to (a pod group's name); None: its own job."""
        ...

    def compose(self, namespace: str, name: str, members: Sequence[Job]) -> dict[str, Any]:
        """The one job standing for `members` (never empty)."""
        ...

    def members_of(self, composed: Job) -> list[dict[str, Any]]:
        """The member objects a composed job holds, in a stable order."""
        ...

    def composed_workload(self, workload: Workload, composed: Job) -> Workload:
        """The Workload `build_workload` made for `composed`, named and owned as upstream
        names and owns a composed job's Workload (every member an owner)."""
        ...

    def composed_name_of_workload(self, workload: Mapping[str, Any]) -> str | None:
        """The composed job a Workload stands for (None: not a composed job's)."""
        ...

    def match_composed(self, composed: Job, workload: Workload | None) -> ComposedMatch:
        """How the members stand to their (not prebuilt) Workload, or, with None, which
        of them a new Workload is built from (`equivalent`: there are enough for one)."""
        ...

    def prebuilt_workload_matches(self, composed: Job, workload: Workload) -> bool:
        """Whether the prebuilt Workload the composed job's members name (a
        LeaderWorkerSet's group) still stands for it. Never raises `IncompleteJob`: a
        group whose members arrive one by one is started on arrival, as upstream."""
        ...


def composed(kind: object) -> ComposedJobs | None:
    return kind if isinstance(kind, ComposedJobs) else None


@runtime_checkable
class ResizesInSlices(Protocol):
    """The kind's jobs may opt in to elastic resizing (upstream's
    ElasticJobsViaWorkloadSlices, `kueue.x-k8s.io/elastic-job: "true"`): while admitted,
    a lower pod count shrinks the Workload in place and a higher one queues a new
    Workload slice that replaces the old (`framework.workload_slicing`). The kind's pods
    must keep running across the swap (a batch Job's do: only its parallelism changes)."""

    @property
    def resizes_in_slices(self) -> bool: ...


def resizes_in_slices(kind: object) -> bool:
    return isinstance(kind, ResizesInSlices) and kind.resizes_in_slices
