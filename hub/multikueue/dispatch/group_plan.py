"""What to do next for one manager Workload and its remote copies: a pure plan.

The reconciler gathers a `GroupSnapshot` from caches (the manager Workload, and per worker
of its MultiKueueConfig, in config order, whether it is connected and which of our
objects it holds) and `plan_group` answers with the steps to run, in order. The rules are
upstream's (multikueue.md §2 and §4), in upstream's order of precedence:

1. the local Workload is gone or terminating: remove every remote copy;
2. Rejected, or no MultiKueue check: nothing; no usable owner job: Rejected;
3. finished, or no quota reserved: remove every copy, then forget the placement;
4. a copy Finished: copy the job status back one last time, finish the local Workload
   (a copy finished `OutOfSync` asks for a retry instead);
5. the admitting worker evicted its copy: Retry (unless the manager asked for it);
6. copies whose spec drifted: priority patched in place, anything else removed;
7. a copy is admitted: it wins (the placed cluster if clusterName is set, else, among
   nominated workers, the copy that already has its job, else the earliest admission);
   the others are removed; if the manager evicted the workload the winner is
   deactivated, else its job is created or its status copied back and the check marked
   Ready in one write;
8. Ready but no admitted copy: the admitting worker disconnected keeps Ready until
   workerLostTimeout from the start of its outage, then Retry; a copy that vanished from
   a reachable worker is Retry at once;
9. Pending with a clusterName: a placement left from an earlier admission cycle (the
   manager evicted and reserved again between two passes) is forgotten, copies removed
   (a placed worker out of sight is waited for, up to workerLostTimeout);
10. Pending (and not being evicted): unless a nominated worker is out of sight (its copy
   may be admitted there; waited for up to workerLostTimeout), ask the dispatcher, then
   `plan_nomination` syncs the copies with the answer: created on nominated connected
   workers, removed from the others.

Objects of disconnected workers are unknown and never acted on; a worker's objects are
only those carrying our origin label (the caches hold nothing else).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.api.admission_check import CheckState
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.api.workload_conditions import WorkloadReason
from hub.multikueue.dispatch.remote_copy import SpecDrift, spec_drift
from hub.multikueue.dispatch.status_changes import (
    ClearPlacement,
    DeactivateRemote,
    Finish,
    ForgetPlacement,
    MarkAdmitted,
    Nominate,
    SetCheckState,
    StatusCompute,
    topology_assigned_pod_sets,
)
from hub.multikueue.dispatch.workload_facts import (
    CheckFact,
    Json,
    cluster_name,
    find_check,
    has_quota_reservation,
    is_deleting,
    is_finished,
    nominated_cluster_names,
    others_ready,
    true_condition,
)

ADMITTING_REMOTE_LOST = "Admitting remote lost"
FINAL_JOB_STATUS_GRACE_SECONDS = 30.0
"""How long a finished remote Workload waits for its Job's final status to be seen."""
EVICTED_ON_MANAGER_DEACTIVATION = (
    f"{WorkloadReason.DEACTIVATED.value}DueTo{WorkloadReason.EVICTED_ON_MANAGER_CLUSTER.value}"
)
"""The eviction reason a worker's Kueue writes when it deactivates a copy we deactivated."""


@dataclass(frozen=True, slots=True)
class RemoteSlot:
    """One worker of the config, as the caches see it."""

    cluster: str
    connected: bool
    workload: Json | None = None
    """Our copy of the Workload (None: none, or the worker is not connected)."""
    job: Json | None = None
    """Our copy of the owner job for this Workload, if any (the first, when it is copied
    as several objects: the Pods of a pod group)."""
    job_finished: bool = False
    """`job` shows a final status (its kind's `finished`; a pod group's, of all `jobs`)."""
    disconnected_since: float | None = None
    jobs: tuple[Json, ...] = ()
    """Every object of our copy of the owner job (`job` among them)."""

    def __post_init__(self) -> None:
        if self.job is not None and not self.jobs:
            object.__setattr__(self, "jobs", (self.job,))

    @property
    def holds_objects(self) -> bool:
        return self.connected and (self.workload is not None or self.job is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSnapshot:
    key: str
    local: Json
    deleted: bool
    """The local Workload is gone (`local` is its last known state) or terminating."""
    check: str
    slots: tuple[RemoteSlot, ...]
    now: float
    now_text: str
    worker_lost_timeout: float
    rejection: str | None = None
    """Why the workload can never be dispatched (no adapter, owner not managed)."""
    owner_missing: bool = False
    """The owner job is not in the cache (yet): try again later."""

    def slot(self, cluster: str | None) -> RemoteSlot | None:
        for slot in self.slots:
            if slot.cluster == cluster:
                return slot
        return None


# -- steps ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoveRemote:
    """Delete our job (first) and our Workload copy on a connected worker."""

    cluster: str
    why: str


@dataclass(frozen=True, slots=True)
class CreateRemote:
    cluster: str


@dataclass(frozen=True, slots=True)
class PatchRemotePriority:
    cluster: str


@dataclass(frozen=True, slots=True)
class DeactivateRemoteCopy:
    cluster: str
    change: DeactivateRemote


@dataclass(frozen=True, slots=True)
class SyncJob:
    """Create the winner's remote job, or copy its status back (`final`: never create)."""

    cluster: str
    final: bool = False


@dataclass(frozen=True, slots=True)
class WriteStatus:
    change: StatusCompute


@dataclass(frozen=True, slots=True)
class Admitted:
    """A worker admitted the workload (recorded once the Ready write lands)."""

    cluster: str
    admitted_at: float | None


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Ask the configured dispatcher for nominations, then run `plan_nomination`."""


@dataclass(frozen=True, slots=True)
class Requeue:
    after_seconds: float


@dataclass(frozen=True, slots=True)
class RetryLater:
    """Something needed is not there yet: retry with backoff."""

    why: str


@dataclass(frozen=True, slots=True)
class Settled:
    """Nothing remains to do for this workload: the dispatcher may forget it."""


Step = (
    RemoveRemote
    | CreateRemote
    | PatchRemotePriority
    | DeactivateRemoteCopy
    | SyncJob
    | WriteStatus
    | Admitted
    | Dispatch
    | Requeue
    | RetryLater
    | Settled
)


@dataclass(slots=True)
class _Builder:
    steps: list[Step] = field(default_factory=list)

    def remove_all(self, slots: Sequence[RemoteSlot], why: str, keep: str | None = None) -> None:
        for slot in slots:
            if slot.cluster != keep and slot.holds_objects:
                self.steps.append(RemoveRemote(slot.cluster, why))


# -- the plan ------------------------------------------------------------------------------


def plan_group(snapshot: GroupSnapshot) -> list[Step]:
    """The ordered steps for one workload (see module docstring)."""
    out = _Builder()
    local = snapshot.local
    if snapshot.deleted or is_deleting(local):
        out.remove_all(snapshot.slots, "the local workload is deleted")
        out.steps.append(Settled())
        return out.steps
    check = find_check(local, snapshot.check)
    if check is None or check.state is CheckState.REJECTED:
        out.steps.append(Settled())
        return out.steps
    if snapshot.rejection is not None:
        reject = SetCheckState(
            snapshot.check,
            CheckState.REJECTED,
            snapshot.rejection,
            snapshot.now_text,
            from_states=(CheckState.PENDING, CheckState.READY, CheckState.RETRY),
        )
        return [WriteStatus(reject)]
    if is_finished(local) or not has_quota_reservation(local):
        out.remove_all(snapshot.slots, "the local workload is finished or holds no quota")
        if not is_finished(local):
            out.steps.append(WriteStatus(ClearPlacement()))
        out.steps.append(Settled())
        return out.steps
    if snapshot.owner_missing:
        return [RetryLater("the owner job is not in the cache")]
    live = [s for s in snapshot.slots if s.connected and s.workload is not None]
    placed = cluster_name(local)

    finished = _earliest(live, Cond.FINISHED, prefer=placed)
    if finished is not None:
        return _finish(snapshot, check, finished)

    placed_slot = snapshot.slot(placed)
    if placed_slot is not None and placed_slot.workload is not None and placed_slot.connected:
        evicted = true_condition(placed_slot.workload, Cond.EVICTED)
        if evicted is not None and evicted.reason in (
            EVICTED_ON_MANAGER_DEACTIVATION,
            WorkloadReason.EVICTED_ON_MANAGER_CLUSTER,
        ):
            return [SyncJob(placed_slot.cluster, final=True)]
        if evicted is not None and check.state is CheckState.READY:
            message = (
                f'Workload evicted on worker cluster: "{placed}", resetting for re-admission.'
                f' Previously: "{check.state.value}"'
            )
            retry = SetCheckState(
                snapshot.check,
                CheckState.RETRY,
                message,
                snapshot.now_text,
                from_states=(CheckState.READY,),
                placed_on=placed,
            )
            return [WriteStatus(retry)]

    kept: list[RemoteSlot] = []
    for slot in live:
        assert slot.workload is not None
        drift = spec_drift(local, slot.workload)
        if drift is SpecDrift.PRIORITY:
            out.steps.append(PatchRemotePriority(slot.cluster))
            kept.append(slot)
        elif drift is SpecDrift.OTHER:
            out.steps.append(RemoveRemote(slot.cluster, "its spec no longer matches"))
        else:
            kept.append(slot)

    winner = _winner(kept, placed, nominated_cluster_names(local))
    if winner is not None:
        return out.steps + _admitted(snapshot, check, winner)
    if check.state is CheckState.READY:
        out.remove_all(snapshot.slots, "not the admitting worker", keep=placed)
        out.steps.extend(_lost(snapshot, check, placed))
        return out.steps
    if check.state is not CheckState.PENDING:
        return out.steps
    if placed is not None:
        # Placed in an earlier admission cycle (the manager evicted and reserved again
        # before this pass saw the reservation go): that placement is over, once the
        # placed worker can be seen not to run it (a disconnected one might), or once it
        # has been out of sight for workerLostTimeout (its stale copy is removed when it
        # returns: a copy on a worker not nominated cannot win).
        if placed_slot is not None and not placed_slot.connected:
            since = placed_slot.disconnected_since
            remaining = (snapshot.now if since is None else since) + snapshot.worker_lost_timeout
            if remaining > snapshot.now:
                out.steps.append(Requeue(remaining - snapshot.now))
                return out.steps
        out.remove_all(snapshot.slots, "the placement is from an earlier admission")
        out.steps.append(WriteStatus(ForgetPlacement(snapshot.check, placed)))
        out.steps.append(Settled())
        return out.steps
    if true_condition(local, Cond.EVICTED) is None and others_ready(local, check.name):
        unseen = _nominee_out_of_sight(snapshot)
        out.steps.append(Dispatch() if unseen is None else Requeue(unseen))
    return out.steps


def _nominee_out_of_sight(snapshot: GroupSnapshot) -> float | None:
    """Seconds to hold the nomination while a nominated worker cannot be seen, else None.

    Its copy may already be admitted there (a hub restarted before that worker connected,
    or an outage): nominating others now could admit the workload twice. As for an
    admitting worker, workerLostTimeout from the start of the outage bounds the wait.
    """
    waits = []
    for name in nominated_cluster_names(snapshot.local):
        slot = snapshot.slot(name)
        if slot is None or slot.connected:
            continue
        since = snapshot.now if slot.disconnected_since is None else slot.disconnected_since
        remaining = since + snapshot.worker_lost_timeout - snapshot.now
        if remaining > 0:
            waits.append(remaining)
    return min(waits) if waits else None


def _earliest(slots: Sequence[RemoteSlot], type_: str, prefer: str | None) -> RemoteSlot | None:
    """The slot whose condition `type_` turned True first (the placed cluster wins ties)."""
    best: tuple[float, int, int] | None = None
    chosen: RemoteSlot | None = None
    for index, slot in enumerate(slots):
        assert slot.workload is not None
        fact = true_condition(slot.workload, type_)
        if fact is None:
            continue
        rank = (
            fact.since if fact.since is not None else float("inf"),
            slot.cluster != prefer,
            index,
        )
        if best is None or rank < best:
            best, chosen = rank, slot
    return chosen


def _winner(
    slots: Sequence[RemoteSlot], placed: str | None, nominated: Sequence[str]
) -> RemoteSlot | None:
    """The admitted copy that runs the workload.

    Once clusterName is set it alone can win (it is immutable). Before, only a nominated
    worker can win (clusterName must be one of nominatedClusterNames: an admitted copy on
    a worker nominated no more is stale and removed with the nomination sync); among
    those, a copy that already has its job wins (a hub that crashed after creating the
    job and before recording the placement picks the same worker again); else the
    earliest admission.
    """
    admitted = [
        s for s in slots if s.workload is not None and true_condition(s.workload, Cond.ADMITTED)
    ]
    if placed is not None:
        return next((s for s in admitted if s.cluster == placed), None)
    if nominated:
        admitted = [s for s in admitted if s.cluster in nominated]
    with_job = [s for s in admitted if s.job is not None]
    return _earliest(with_job or admitted, Cond.ADMITTED, prefer=None)


def may_await_final_status(snapshot: GroupSnapshot, slot: RemoteSlot) -> bool:
    """Whether finishing may still wait for the remote Job's final status to be copied:
    for FINAL_JOB_STATUS_GRACE_SECONDS after the copy finished (a Job that never shows
    one, or a local Job that never starts, must not hold the Workload forever)."""
    finished = None if slot.workload is None else true_condition(slot.workload, Cond.FINISHED)
    since = snapshot.now if finished is None or finished.since is None else finished.since
    return snapshot.now < since + FINAL_JOB_STATUS_GRACE_SECONDS


def _finish(snapshot: GroupSnapshot, check: CheckFact, slot: RemoteSlot) -> list[Step]:
    assert slot.workload is not None
    fact = true_condition(slot.workload, Cond.FINISHED)
    assert fact is not None
    if fact.reason == WorkloadReason.OUT_OF_SYNC:
        message = f'The remote workload finished out of sync on "{slot.cluster}": {fact.message}'
        retry = SetCheckState(
            snapshot.check,
            CheckState.RETRY,
            message,
            snapshot.now_text,
            from_states=(CheckState.PENDING, CheckState.READY),
        )
        return [RemoveRemote(slot.cluster, "it finished out of sync"), WriteStatus(retry)]
    if slot.job is not None and not slot.job_finished and may_await_final_status(snapshot, slot):
        # The remote Workload and Job come through separate watches: the Workload's Finished
        # can arrive before the Job's final status. Finishing now would copy a running
        # status and then remove the copy, losing the Job's outcome; wait for it.
        return [RetryLater(f'the Job on "{slot.cluster}" has not shown its final status')]
    finish = Finish(fact.reason, fact.message, snapshot.now_text)
    return [SyncJob(slot.cluster, final=True), WriteStatus(finish)]


def _admitted(snapshot: GroupSnapshot, check: CheckFact, winner: RemoteSlot) -> list[Step]:
    out = _Builder()
    out.remove_all(snapshot.slots, "another worker admitted the workload", keep=winner.cluster)
    evicted = true_condition(snapshot.local, Cond.EVICTED)
    if evicted is not None:
        message = f"Evicted on manager: {evicted.message}"
        out.steps.append(
            DeactivateRemoteCopy(winner.cluster, DeactivateRemote(message, snapshot.now_text))
        )
        return out.steps
    if check.state not in (CheckState.PENDING, CheckState.READY):
        out.steps.append(SyncJob(winner.cluster, final=True))  # never start a job on Retry
        return out.steps
    out.steps.append(SyncJob(winner.cluster))
    assert winner.workload is not None
    admitted = true_condition(winner.workload, Cond.ADMITTED)
    mark = MarkAdmitted(
        snapshot.check,
        winner.cluster,
        snapshot.now_text,
        topology_assigned_pod_sets(winner.workload),
    )
    out.steps.append(WriteStatus(mark))
    out.steps.append(Admitted(winner.cluster, admitted.since if admitted else None))
    return out.steps


def _lost(snapshot: GroupSnapshot, check: CheckFact, placed: str | None) -> list[Step]:
    """Ready, yet no admitted copy is visible: wait out a disconnection, else Retry."""
    slot = snapshot.slot(placed)
    retry = WriteStatus(
        SetCheckState(
            snapshot.check,
            CheckState.RETRY,
            ADMITTING_REMOTE_LOST,
            snapshot.now_text,
            from_states=(CheckState.READY,),
            placed_on=placed,
        )
    )
    if slot is not None and slot.connected:
        if slot.workload is None:
            return [retry]  # reachable, and our copy is gone
        since = check.since  # there, but no longer admitted: give it the timeout
    elif slot is not None:
        since = slot.disconnected_since
    else:
        since = check.since  # not in the config (any more)
    if since is None:
        since = snapshot.now
    remaining = since + snapshot.worker_lost_timeout - snapshot.now
    if remaining > 0:
        return [Requeue(remaining)]
    return [retry]


def plan_nomination(
    snapshot: GroupSnapshot, nominated: Sequence[str], *, write: bool
) -> list[Step]:
    """Persist the nomination (when the dispatcher owns it), then sync the copies with it."""
    steps: list[Step] = []
    if write:
        steps.append(WriteStatus(Nominate(snapshot.check, tuple(nominated))))
    for slot in snapshot.slots:
        if not slot.connected:
            continue
        if slot.cluster in nominated:
            if slot.workload is None:
                steps.append(CreateRemote(slot.cluster))
        elif slot.holds_objects:
            steps.append(RemoveRemote(slot.cluster, "the worker is not nominated"))
    return steps
