"""A workload's phase and story, told from the conditions the hub writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cli.ops.queue_positions import PositionSource, QueuePosition
from cli.ops.workload_phase import WorkloadPhase, dispatched_to, workload_phase
from cli.ops.workload_story import pending_reason, tell_story
from core.api.codec import decode
from core.api.workload import Workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(minutes: int) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def cond(kind: str, status: str, reason: str, message: str, minutes: int) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at(minutes),
    }


def workload(status: dict[str, Any], *, active: bool = True) -> Workload:
    return decode(
        Workload,
        {
            "metadata": {"name": "w", "namespace": "ns", "creationTimestamp": at(0)},
            "spec": {"queueName": "lq", "priority": 7, "active": active},
            "status": status,
        },
    )


ADMITTED = {
    "conditions": [
        cond("QuotaReserved", "True", "QuotaReserved", "reserved", 2),
        cond("Admitted", "True", "Admitted", "The workload is admitted", 3),
    ],
    "admission": {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"nvidia.com/gpu": "a100", "cpu": "default"}}
        ],
    },
    "admissionChecks": [
        {
            "name": "mk",
            "state": "Ready",
            "message": 'The workload got reservation on "w2"',
            "lastTransitionTime": at(3),
        }
    ],
    "clusterName": "w2",
}


@pytest.mark.parametrize(
    ("conditions", "active", "phase"),
    [
        ([], True, WorkloadPhase.PENDING),
        ([cond("QuotaReserved", "False", "Pending", "no quota", 1)], True, WorkloadPhase.PENDING),
        (
            [cond("QuotaReserved", "True", "QuotaReserved", "", 1)],
            True,
            WorkloadPhase.QUOTA_RESERVED,
        ),
        (ADMITTED["conditions"], True, WorkloadPhase.ADMITTED),
        (
            [*ADMITTED["conditions"], cond("Evicted", "True", "Preempted", "by x", 5)],
            True,
            WorkloadPhase.EVICTED,
        ),
        ([cond("Evicted", "True", "Deactivated", "", 5)], False, WorkloadPhase.INACTIVE),
        (
            [*ADMITTED["conditions"], cond("Finished", "True", "Succeeded", "", 9)],
            False,
            WorkloadPhase.FINISHED,
        ),
    ],
)
def test_phase_follows_the_most_decisive_condition(
    conditions: list[dict[str, Any]], active: bool, phase: WorkloadPhase
) -> None:
    assert workload_phase(workload({"conditions": conditions}, active=active)) is phase


def test_pending_story_says_why_and_where_in_the_queue() -> None:
    pending = workload(
        {"conditions": [cond("QuotaReserved", "False", "Pending", "insufficient cpu", 1)]}
    )
    story = tell_story(
        pending, {("ns", "lq"): "cq"}, QueuePosition("cq", 4, 1, PositionSource.COMPUTED)
    )
    assert story.pending_reason == "insufficient cpu"
    assert story.cluster_queue == "cq"
    assert story.position is not None and story.position.cluster_queue == 4
    assert [(step.step, step.detail) for step in story.steps] == [
        ("Created", "in LocalQueue lq (ClusterQueue cq), priority 7"),
        ("Queued", "Pending: insufficient cpu"),
    ]
    assert pending_reason(workload({})) == "not yet considered by the scheduler"


def test_admitted_dispatched_evicted_story_in_time_order() -> None:
    status = dict(ADMITTED)
    status["conditions"] = [
        *ADMITTED["conditions"],
        cond("Evicted", "True", "Preempted", "to make room for ns/urgent", 8),
        cond("Finished", "False", "", "", 9),
    ]
    status["schedulingStats"] = {
        "evictions": [{"reason": "Preempted", "underlyingCause": "InCohortReclamation", "count": 2}]
    }
    story = tell_story(workload(status), {}, None)
    assert story.worker == "w2" and story.pending_reason == "" and story.position is None
    assert [(step.step, step.detail) for step in story.steps] == [
        ("Created", "in LocalQueue lq (ClusterQueue cq), priority 7"),
        ("QuotaReserved", "in ClusterQueue cq; flavors main: cpu=default, nvidia.com/gpu=a100"),
        ("Check mk", 'Ready: The workload got reservation on "w2"'),
        ("Admitted", "The workload is admitted"),
        ("Dispatched", "to worker w2"),
        ("Evicted", "Preempted: to make room for ns/urgent"),
        ("EvictionCount", "2x Preempted (InCohortReclamation)"),
    ]


def test_dispatch_target_is_the_cluster_name_else_the_nominated_workers() -> None:
    assert dispatched_to(workload(ADMITTED)) == "w2"
    assert dispatched_to(workload({"nominatedClusterNames": ["w1", "w3"]})) == "nominated: w1, w3"
    assert dispatched_to(workload({})) == ""


def test_messages_print_literally_even_when_they_look_like_markup(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from cli.ops.describe_command import print_story

    message = "quota [/] for [bold]gpu[/bold] exhausted"
    pending = workload({"conditions": [cond("QuotaReserved", "False", "Pending", message, 1)]})
    print_story(tell_story(pending, {}, None))
    out = capsys.readouterr().out
    assert f"Pending because:  {message}" in out
    assert f"Pending: {message}" in out
