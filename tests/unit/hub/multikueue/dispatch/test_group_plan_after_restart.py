"""A restarted hub (or an outage) must not admit a workload twice, nor get stuck.

Found by the failure e2e test (tests/e2e/test_multikueue_failures.py): a hub killed
mid-dispatch came back, saw worker-2 connected before worker-1 (which already held an
admitted copy), nominated worker-2, got a second admission there, then chose worker-1's
earlier admission, whose clusterName the webhook refused (not nominated): stuck forever.
"""

from __future__ import annotations

from hub.multikueue.dispatch.group_plan import RemoteSlot, Requeue, plan_group

from .builders import NOW, T0, local_workload, remote_copy
from .test_group_plan import TIMEOUT, kinds, snapshot


def test_a_nominated_worker_not_seen_yet_holds_the_nomination() -> None:
    local = local_workload(nominated=["w1"])
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", False, disconnected_since=NOW - 5),
            RemoteSlot("w2", True),
        )
    )
    assert steps == [Requeue(TIMEOUT - 5)]  # no Dispatch: w1 may hold an admitted copy


def test_a_nominated_worker_lost_past_the_timeout_is_dispatched_around() -> None:
    local = local_workload(nominated=["w1"])
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", False, disconnected_since=NOW - TIMEOUT - 1),
            RemoteSlot("w2", True),
        )
    )
    assert kinds(steps) == [("Dispatch", None)]


def test_an_admitted_copy_on_a_worker_no_longer_nominated_cannot_win() -> None:
    local = local_workload(nominated=["w2"])
    steps = plan_group(
        snapshot(
            local,
            RemoteSlot("w1", True, workload=remote_copy(local, admitted_at=T0)),
            RemoteSlot("w2", True, workload=remote_copy(local, admitted_at=T0 + 30)),
        )
    )
    assert ("write", "MarkAdmitted") in kinds(steps)
    assert ("Admitted", "w2") in kinds(steps)
    assert ("RemoveRemote", "w1") in kinds(steps)


def test_a_placement_left_on_a_worker_lost_past_the_timeout_is_forgotten() -> None:
    # Evicted for the lost worker and reserved again before a pass saw the reservation go.
    local = local_workload(cluster="w1")
    lost = RemoteSlot("w1", False, disconnected_since=NOW - TIMEOUT - 1)
    assert kinds(plan_group(snapshot(local, lost, RemoteSlot("w2", True)))) == [
        ("write", "ForgetPlacement"),
        ("Settled", None),
    ]
    recent = RemoteSlot("w1", False, disconnected_since=NOW - 5)
    assert plan_group(snapshot(local, recent, RemoteSlot("w2", True))) == [Requeue(TIMEOUT - 5)]
