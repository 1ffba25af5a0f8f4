"""The planner's decisions for one manager Workload and its copies, rule by rule."""

from __future__ import annotations

from typing import Any

from core.api.admission_check import CheckState
from hub.multikueue.dispatch.group_plan import (
    ADMITTING_REMOTE_LOST,
    Admitted,
    CreateRemote,
    DeactivateRemoteCopy,
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
    plan_group,
    plan_nomination,
)
from hub.multikueue.dispatch.status_changes import (
    ClearPlacement,
    Finish,
    MarkAdmitted,
    Nominate,
    SetCheckState,
    topology_assigned_pod_sets,
)

from .builders import CHECK, NOW, T0, condition, local_workload, remote_copy, remote_job, stamp

TIMEOUT = 60.0


def snapshot(local: dict[str, Any], *slots: RemoteSlot, **extra: Any) -> GroupSnapshot:
    return GroupSnapshot(
        key="ns/job-a-1234",
        local=local,
        deleted=extra.pop("deleted", False),
        check=CHECK,
        slots=slots,
        now=extra.pop("now", NOW),
        now_text=stamp(NOW),
        worker_lost_timeout=TIMEOUT,
        **extra,
    )


def kinds(steps: list[Step]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for step in steps:
        if isinstance(step, WriteStatus):
            out.append(("write", type(step.change).__name__))
        elif isinstance(step, RemoveRemote | CreateRemote | PatchRemotePriority):
            out.append((type(step).__name__, step.cluster))
        elif isinstance(step, SyncJob):
            out.append(("SyncJob", (step.cluster, step.final)))
        elif isinstance(step, DeactivateRemoteCopy | Admitted):
            out.append((type(step).__name__, step.cluster))
        else:
            out.append((type(step).__name__, None))
    return out


def write_of(steps: list[Step]) -> Any:
    (write,) = [s for s in steps if isinstance(s, WriteStatus)]
    return write.change


def test_a_deleted_local_workload_removes_copies_on_connected_workers_only() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0), job=remote_job()),
            RemoteSlot("w2", False, disconnected_since=T0),
            RemoteSlot("w3", True),
            deleted=True,
        )
    )
    assert kinds(steps) == [("RemoveRemote", "w1"), ("Settled", None)]


def test_a_finished_workload_removes_every_copy_and_keeps_its_cluster_name() -> None:
    local = local_workload(
        check_state="Ready", cluster="w1", conditions=[condition("Finished", reason="Succeeded")]
    )
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)))
    )
    assert kinds(steps) == [("RemoveRemote", "w1"), ("Settled", None)]


def test_losing_the_reservation_removes_copies_then_forgets_the_placement() -> None:
    local = local_workload(check_state="Pending", reserved=False, cluster="w1")
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)),
            RemoteSlot("w2", True, workload=remote_copy(local)),
        )
    )
    assert kinds(steps) == [
        ("RemoveRemote", "w1"),
        ("RemoveRemote", "w2"),
        ("write", "ClearPlacement"),
        ("Settled", None),
    ]
    assert ClearPlacement()(local) == {"clusterName": None, "nominatedClusterNames": None}


def test_a_pending_workload_asks_the_dispatcher_and_nomination_syncs_the_copies() -> None:
    local = local_workload()
    snap = snapshot(
        local,
        RemoteSlot("w1", True),
        RemoteSlot("w2", True, workload=remote_copy(local)),
        RemoteSlot("w3", False, disconnected_since=T0),
        RemoteSlot("w4", True, workload=remote_copy(local)),
    )
    assert kinds(plan_group(snap)) == [("Dispatch", None)]
    steps = plan_nomination(snap, ("w1", "w2", "w3"), write=True)
    assert kinds(steps) == [
        ("write", "Nominate"),
        ("CreateRemote", "w1"),
        ("RemoveRemote", "w4"),
    ]
    assert write_of(steps) == Nominate(CHECK, ("w1", "w2", "w3"))
    assert kinds(plan_nomination(snap, ("w1",), write=False))[0] == ("CreateRemote", "w1")


def test_no_dispatch_until_every_other_check_is_ready() -> None:
    local = local_workload(other_checks={"prov": "Pending"})
    assert plan_group(snapshot(local, RemoteSlot("w1", True))) == []


def test_the_earliest_admission_wins_and_the_loser_is_removed() -> None:
    local = local_workload(nominated=["w1", "w2"])
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0 + 20)),
            RemoteSlot("w2", True, workload=remote_copy(local, admitted_at=T0 + 10)),
        )
    )
    assert kinds(steps) == [
        ("RemoveRemote", "w1"),
        ("SyncJob", ("w2", False)),
        ("write", "MarkAdmitted"),
        ("Admitted", "w2"),
    ]
    change = write_of(steps)
    patch = change(local)
    assert patch["clusterName"] == "w2" and patch["nominatedClusterNames"] is None
    (entry,) = patch["admissionChecks"]
    assert entry["state"] == "Ready"
    assert entry["message"] == 'The workload was admitted on "w2"'
    admitted = [s for s in steps if isinstance(s, Admitted)]
    assert admitted[0].admitted_at == T0 + 10


def test_a_placed_workload_keeps_its_cluster_even_if_another_copy_admitted_earlier() -> None:
    local = local_workload(check_state="Ready", cluster="w2")
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)),
            RemoteSlot(
                "w2", True, workload=remote_copy(local, admitted_at=T0 + 50), job=remote_job()
            ),
        )
    )
    assert kinds(steps)[:2] == [("RemoveRemote", "w1"), ("SyncJob", ("w2", False))]


def test_before_placement_a_copy_that_already_has_its_job_wins() -> None:
    local = local_workload()
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)),
            RemoteSlot(
                "w2", True, workload=remote_copy(local, admitted_at=T0 + 5), job=remote_job()
            ),
        )
    )
    assert ("SyncJob", ("w2", False)) in kinds(steps)
    assert ("RemoveRemote", "w1") in kinds(steps)


def test_a_finished_copy_finishes_the_local_workload_with_its_reason_and_message() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    finished = condition("Finished", reason="Failed", message="Job failed: BackoffLimitExceeded")
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot(
                "w1", True, workload=remote_copy(local, admitted_at=T0, conditions=[finished])
            ),
        )
    )
    assert kinds(steps) == [("SyncJob", ("w1", True)), ("write", "Finish")]
    patch = write_of(steps)(local)
    (done,) = [c for c in patch["conditions"] if c["type"] == "Finished"]
    assert (done["status"], done["reason"], done["message"]) == (
        "True",
        "Failed",
        "Job failed: BackoffLimitExceeded",
    )
    assert {c["type"] for c in patch["conditions"]} == {"QuotaReserved", "Finished"}


def test_a_copy_finished_out_of_sync_is_retried_instead() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    out_of_sync = condition("Finished", reason="OutOfSync", message="the job changed")
    steps = plan_group(
        snapshot(
            local, RemoteSlot("w1", True, workload=remote_copy(local, conditions=[out_of_sync]))
        )
    )
    assert kinds(steps) == [("RemoveRemote", "w1"), ("write", "SetCheckState")]
    assert write_of(steps).state is CheckState.RETRY


def test_eviction_on_the_admitting_worker_asks_for_a_retry() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    evicted = condition("Evicted", reason="Preempted", message="preempted by a higher priority")
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, conditions=[evicted])))
    )
    change = write_of(steps)
    assert isinstance(change, SetCheckState) and change.state is CheckState.RETRY
    assert change.message == (
        'Workload evicted on worker cluster: "w1", resetting for re-admission. Previously: "Ready"'
    )
    patch = change(local)
    assert patch is not None
    (entry,) = patch["admissionChecks"]
    assert entry["state"] == "Retry"


def test_an_eviction_the_manager_asked_for_only_syncs_the_job() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    evicted = condition("Evicted", reason="DeactivatedDueToEvictedOnManagerCluster")
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, conditions=[evicted])))
    )
    assert kinds(steps) == [("SyncJob", ("w1", True))]


def test_eviction_on_the_manager_deactivates_the_admitted_copy() -> None:
    local = local_workload(
        check_state="Pending",
        cluster="w1",
        conditions=[condition("Evicted", reason="Preempted", message="preempted on the manager")],
    )
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)))
    )
    assert kinds(steps) == [("DeactivateRemoteCopy", "w1")]
    (step,) = steps
    assert isinstance(step, DeactivateRemoteCopy)
    remote = remote_copy(local, admitted_at=T0)
    patch = step.change(remote)
    assert patch is not None
    (target,) = [c for c in patch["conditions"] if c["type"] == "DeactivationTarget"]
    assert target["reason"] == "EvictedOnManagerCluster"
    assert target["message"] == "Evicted on manager: preempted on the manager"


def test_a_disconnected_admitting_worker_keeps_ready_until_the_timeout() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    lost_since = NOW - 20
    steps = plan_group(snapshot(local, RemoteSlot("w1", False, disconnected_since=lost_since)))
    assert steps == [Requeue(TIMEOUT - 20)]
    later = plan_group(
        snapshot(
            local, RemoteSlot("w1", False, disconnected_since=lost_since), now=lost_since + TIMEOUT
        )
    )
    change = write_of(later)
    assert change.state is CheckState.RETRY and change.message == ADMITTING_REMOTE_LOST


def test_a_copy_gone_from_a_reachable_worker_is_retried_at_once() -> None:
    local = local_workload(check_state="Ready", cluster="w1")
    change = write_of(plan_group(snapshot(local, RemoteSlot("w1", True), RemoteSlot("w2", True))))
    assert change.state is CheckState.RETRY and change.message == ADMITTING_REMOTE_LOST
    assert change(local)["admissionChecks"][0]["state"] == "Retry"


def test_a_priority_change_is_patched_in_place_and_other_drift_replaces_the_copy() -> None:
    local = local_workload(priority=100)
    old_priority = remote_copy(local)
    old_priority["spec"] = dict(old_priority["spec"], priority=1)
    other = remote_copy(local)
    other["spec"] = dict(other["spec"], queueName="elsewhere")
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=old_priority),
            RemoteSlot("w2", True, workload=other),
        )
    )
    assert kinds(steps) == [
        ("PatchRemotePriority", "w1"),
        ("RemoveRemote", "w2"),
        ("Dispatch", None),
    ]


def test_a_workload_without_an_adapter_is_rejected_once() -> None:
    local = local_workload()
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True), rejection="No multikueue adapter found")
    )
    change = write_of(steps)
    assert change.state is CheckState.REJECTED
    rejected = local_workload(check_state="Rejected")
    assert plan_group(snapshot(rejected, RemoteSlot("w1", True), rejection="x")) == [Settled()]


def test_an_owner_job_not_cached_yet_is_retried_later() -> None:
    steps = plan_group(snapshot(local_workload(), RemoteSlot("w1", True), owner_missing=True))
    assert [type(s) for s in steps] == [RetryLater]


def test_on_retry_an_admitted_copy_never_gets_a_new_job() -> None:
    local = local_workload(check_state="Retry", cluster="w1")
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)))
    )
    assert kinds(steps) == [("SyncJob", ("w1", True))]


def test_status_changes_recheck_on_the_fresh_object() -> None:
    local = local_workload(nominated=["w1"])
    mark = MarkAdmitted(CHECK, "w1", stamp(NOW))
    placed = local_workload(check_state="Ready", cluster="w1")
    placed["status"]["admissionChecks"][0]["message"] = 'The workload was admitted on "w1"'
    assert mark(placed) is None  # already done
    assert mark(local_workload(reserved=False)) is None  # lost its reservation meanwhile
    assert Nominate(CHECK, ("w1",))(local) is None
    assert Nominate(CHECK, ("w2",))(local) == {"nominatedClusterNames": ["w2"]}
    assert (
        Finish("Succeeded", "", stamp(NOW))(local_workload(conditions=[condition("Finished")]))
        is None
    )


def test_a_placement_left_from_an_earlier_admission_is_forgotten() -> None:
    local = local_workload(check_state="Pending", cluster="w1")
    evicted_copy = remote_copy(local, conditions=[condition("Evicted", reason="Preempted")])
    steps = plan_group(snapshot(local, RemoteSlot("w1", True, workload=evicted_copy)))
    assert kinds(steps) == [("RemoveRemote", "w1"), ("write", "ForgetPlacement"), ("Settled", None)]
    assert write_of(steps)(local) == {"clusterName": None, "nominatedClusterNames": None}
    # While the placed worker is away it might still run the workload: wait (up to
    # workerLostTimeout, see test_group_plan_after_restart).
    away = RemoteSlot("w1", False, disconnected_since=NOW - 5)
    assert plan_group(snapshot(local, away)) == [Requeue(TIMEOUT - 5)]


def test_the_same_worker_admitting_again_keeps_the_placement() -> None:
    local = local_workload(check_state="Pending", cluster="w1")
    steps = plan_group(
        snapshot(local, RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)))
    )
    assert ("write", "MarkAdmitted") in kinds(steps)


def test_a_workload_being_evicted_on_the_manager_is_not_dispatched() -> None:
    local = local_workload(conditions=[condition("Evicted", reason="Preempted")])
    assert plan_group(snapshot(local, RemoteSlot("w1", True))) == []
    assert Nominate(CHECK, ("w1",))(local) is None


def _remote_job(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "a"}, "status": {"conditions": list(conditions)}}


def test_a_finished_copy_waits_for_its_jobs_final_status_before_finishing() -> None:
    """The Workload's Finished may arrive before the Job's final status (two watches):
    finishing then would copy a running status and remove the copy for good."""
    local = local_workload(check_state="Ready", cluster="w1")
    finished = condition("Finished", reason="Succeeded", at=NOW - 1)
    copy = remote_copy(local, admitted_at=T0, conditions=[finished])
    running = RemoteSlot("w1", True, workload=copy, job=_remote_job())
    assert kinds(plan_group(snapshot(local, running))) == [("RetryLater", None)]

    complete = RemoteSlot(
        "w1",
        True,
        workload=copy,
        job=_remote_job(condition("Complete", reason="Done")),
        job_finished=True,  # what the reconciler reads from the job's kind
    )
    assert kinds(plan_group(snapshot(local, complete))) == [
        ("SyncJob", ("w1", True)),
        ("write", "Finish"),
    ]

    # Bounded: a Job that never shows a final status does not hold the Workload forever.
    stale_finished = condition("Finished", reason="Succeeded", at=NOW - 60)
    stale = remote_copy(local, admitted_at=T0, conditions=[stale_finished])
    late = RemoteSlot("w1", True, workload=stale, job=_remote_job())
    assert kinds(plan_group(snapshot(local, late))) == [
        ("SyncJob", ("w1", True)),
        ("write", "Finish"),
    ]


def test_a_delayed_topology_request_turns_ready_once_the_admitting_worker_assigned_one() -> None:
    # upstream v0.19.2: the manager admits a TAS workload with delayedTopologyRequest
    # Pending; the worker computes the topology; the manager's request becomes Ready.
    placed = local_workload(check_state="Ready", cluster="w1")
    placed["status"]["admissionChecks"][0]["message"] = 'The workload was admitted on "w1"'
    placed["status"]["admission"] = {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "delayedTopologyRequest": "Pending"}],
    }
    remote = remote_copy(placed, admitted_at=T0)
    remote["status"]["admission"] = {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "topologyAssignment": {"levels": ["kubernetes.io/hostname"]}}
        ],
    }
    assigned = topology_assigned_pod_sets(remote)
    assert assigned == ("main",)
    patch = MarkAdmitted(CHECK, "w1", stamp(NOW), assigned)(placed)
    assert patch is not None
    assert patch["admission"]["podSetAssignments"] == [
        {"name": "main", "delayedTopologyRequest": "Ready"}
    ]
    placed["status"]["admission"] = patch["admission"]
    assert MarkAdmitted(CHECK, "w1", stamp(NOW), assigned)(placed) is None  # done once
    assert MarkAdmitted(CHECK, "w1", stamp(NOW))(placed) is None
