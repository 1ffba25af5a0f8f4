"""Reading a Job's status: finished, active, ready, and the quota it no longer needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.meta import Condition, ConditionStatus
from core.api.workload_conditions import WorkloadReason
from integrations.batch_job.status import (
    is_active,
    job_finished,
    pods_ready,
    pods_ready_state,
    reclaimable_pods,
)


def job(spec: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    return {"spec": spec or {"parallelism": 1}, "status": status}


def condition(kind: str, state: str = "True", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": state, "reason": "R", "message": message}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        ([condition("Suspended")], None),
        ([condition("SuccessCriteriaMet")], None),
        (
            [condition("SuccessCriteriaMet"), condition("Complete", message="Reached expected")],
            (WorkloadReason.SUCCEEDED, "Reached expected"),
        ),
        (
            [condition("FailureTarget"), condition("Failed", message="BackoffLimitExceeded")],
            (WorkloadReason.FAILED, "BackoffLimitExceeded"),
        ),
        ([condition("Complete", state="False")], None),
        ([condition("Failed", state="Unknown")], None),
    ],
    ids=[
        "no conditions: running",
        "suspended is not finished",
        "success criteria met alone is not finished yet",
        "Complete=True: succeeded with its message",
        "Failed=True: failed with its message",
        "Complete=False is not finished",
        "Failed=Unknown is not finished",
    ],
)
def test_job_finished(
    conditions: list[dict[str, Any]], expected: tuple[WorkloadReason, str] | None
) -> None:
    finish = job_finished(job(conditions=conditions))
    if expected is None:
        assert finish is None
    else:
        assert finish is not None
        assert (finish.reason, finish.message) == expected
        assert finish.succeeded is (expected[0] is WorkloadReason.SUCCEEDED)


@pytest.mark.parametrize(("active", "expected"), [(None, False), (0, False), (2, True)])
def test_is_active(active: int | None, expected: bool) -> None:
    status: dict[str, Any] = {} if active is None else {"active": active}
    assert is_active({"status": status}) is expected


@pytest.mark.parametrize(
    ("spec", "succeeded", "expected"),
    [
        ({"parallelism": 4, "completions": 10}, 0, []),
        ({"parallelism": 4, "completions": 10}, 6, []),
        ({"parallelism": 4, "completions": 10}, 7, [("main", 1)]),
        ({"parallelism": 4, "completions": 10}, 8, [("main", 2)]),
        ({"parallelism": 4, "completions": 10}, 10, [("main", 4)]),
        ({"parallelism": 1, "completions": 10}, 9, []),
        ({"parallelism": 3}, 1, [("main", 1)]),
    ],
    ids=[
        "nothing succeeded",
        "remaining work still needs every pod",
        "one pod fewer is needed",
        "two pods fewer are needed",
        "all done: every pod is reclaimable",
        "a single pod is never reclaimed",
        "without completions each success frees a pod",
    ],
)
def test_reclaimable_pods(
    spec: dict[str, Any], succeeded: int, expected: list[tuple[str, int]]
) -> None:
    got = reclaimable_pods(job(spec, succeeded=succeeded))
    assert [(pod.name, pod.count) for pod in got] == expected


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        ({"parallelism": 3, "completions": 6}, {"ready": 2}, False),
        ({"parallelism": 3, "completions": 6}, {"ready": 3}, True),
        ({"parallelism": 3, "completions": 6}, {"ready": 1, "succeeded": 2}, True),
        (
            {"parallelism": 3, "completions": 6},
            {"ready": 2, "uncountedTerminatedPods": {"succeeded": ["uid-1"]}},
            True,
        ),
        ({"parallelism": 5, "completions": 2}, {"ready": 2}, True),
        ({"parallelism": 3, "completions": 6}, {}, False),
    ],
    ids=[
        "two of three ready",
        "all ready",
        "ready plus succeeded",
        "uncounted succeeded pods count",
        "completions below parallelism lower the bar",
        "no status yet",
    ],
)
def test_pods_ready(spec: dict[str, Any], status: dict[str, Any], expected: bool) -> None:
    assert pods_ready(job(spec, **status)) is expected


def ready_condition(status: ConditionStatus, reason: WorkloadReason) -> Condition:
    return Condition(
        type="PodsReady",
        status=status,
        reason=reason,
        last_transition_time=datetime(2025, 3, 1, tzinfo=UTC),
    )


TRUE, FALSE = ConditionStatus.TRUE, ConditionStatus.FALSE


@pytest.mark.parametrize(
    ("admitted", "ready", "current", "expected"),
    [
        (False, True, None, (FALSE, WorkloadReason.WAIT_FOR_START)),
        (True, False, None, (FALSE, WorkloadReason.WAIT_FOR_START)),
        (True, True, None, (TRUE, WorkloadReason.STARTED)),
        (
            True,
            False,
            ready_condition(TRUE, WorkloadReason.STARTED),
            (FALSE, WorkloadReason.WAIT_FOR_RECOVERY),
        ),
        (
            True,
            False,
            ready_condition(FALSE, WorkloadReason.WAIT_FOR_RECOVERY),
            (FALSE, WorkloadReason.WAIT_FOR_RECOVERY),
        ),
        (
            True,
            True,
            ready_condition(FALSE, WorkloadReason.WAIT_FOR_RECOVERY),
            (TRUE, WorkloadReason.RECOVERED),
        ),
        (
            True,
            False,
            ready_condition(FALSE, WorkloadReason.WAIT_FOR_START),
            (FALSE, WorkloadReason.WAIT_FOR_START),
        ),
    ],
    ids=[
        "not admitted: waiting for start",
        "admitted, pods not ready yet",
        "admitted and ready: started",
        "was ready, lost a pod: waiting for recovery",
        "still recovering",
        "ready again: recovered",
        "still starting",
    ],
)
def test_pods_ready_state(
    admitted: bool,
    ready: bool,
    current: Condition | None,
    expected: tuple[ConditionStatus, WorkloadReason],
) -> None:
    state = pods_ready_state(admitted=admitted, job_pods_ready=ready, current=current)
    assert (state.status, state.reason) == expected
    assert state.message
