"""Queue positions the CLI computes (engine order) and reads (visibility API answers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from cli.ops.queue_positions import (
    PositionSource,
    QueuePosition,
    computed_positions,
    positions_from_summary,
    queue_order_time,
)
from core.api.codec import decode
from core.api.workload import Workload
from hub.visibility.summary_types import (
    PendingWorkloadItem,
    PendingWorkloadMeta,
    PendingWorkloadsSummary,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUEUES = {("ns", "lq"): "cq", ("ns", "lq2"): "cq", ("other", "lq"): "cq"}


def workload(
    name: str,
    *,
    priority: int = 0,
    created: datetime = T0,
    uid: str = "",
    namespace: str = "ns",
    queue: str = "lq",
    conditions: list[dict[str, Any]] | None = None,
    active: bool = True,
) -> Workload:
    return decode(
        Workload,
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid or name,
                "creationTimestamp": created.isoformat(),
            },
            "spec": {"queueName": queue, "priority": priority, "active": active},
            "status": {"conditions": conditions or []},
        },
    )


def cond(kind: str, status: str, reason: str, at: datetime) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": at.isoformat(),
    }


def positions(*workloads: Workload) -> dict[str, tuple[int, int]]:
    found = computed_positions(workloads, QUEUES)
    return {name: (p.in_cluster_queue, p.in_local_queue) for (_, name), p in found.items()}


def test_higher_priority_goes_first_then_older_then_uid() -> None:
    assert positions(
        workload("old-low", created=T0),
        workload("new-high", priority=5, created=T0 + timedelta(minutes=5)),
        workload("tie-b", created=T0 + timedelta(minutes=1), uid="b"),
        workload("tie-a", created=T0 + timedelta(minutes=1), uid="a"),
    ) == {"new-high": (0, 0), "old-low": (1, 1), "tie-a": (2, 2), "tie-b": (3, 3)}


def test_local_queue_positions_count_only_that_queue() -> None:
    assert positions(
        workload("a", priority=3),
        workload("b", priority=2, queue="lq2"),
        workload("c", priority=1),
        workload("d", priority=0, namespace="other"),
    ) == {"a": (0, 0), "b": (1, 0), "c": (2, 1), "d": (3, 0)}


def test_eviction_by_check_or_pods_ready_timeout_queues_by_eviction_time() -> None:
    later = T0 + timedelta(hours=1)
    by_check = workload("check", conditions=[cond("Evicted", "True", "AdmissionCheck", later)])
    by_timeout = workload(
        "timeout", conditions=[cond("Evicted", "True", "PodsReadyTimeout", later)]
    )
    preempted = workload("preempted", conditions=[cond("Evicted", "True", "Preempted", later)])
    assert queue_order_time(by_check) == later
    assert queue_order_time(by_timeout) == later
    assert queue_order_time(preempted) == T0
    fresh = workload("fresh", created=T0 + timedelta(minutes=30))
    assert positions(by_check, preempted, fresh) == {
        "preempted": (0, 0),
        "fresh": (1, 1),
        "check": (2, 2),
    }


def test_reserved_inactive_finished_and_queueless_workloads_have_no_position() -> None:
    found = positions(
        workload("waiting"),
        workload("reserved", conditions=[cond("QuotaReserved", "True", "QuotaReserved", T0)]),
        workload("stopped", active=False),
        workload("done", conditions=[cond("Finished", "True", "Succeeded", T0)]),
        workload("lost", queue="no-such-queue"),
    )
    assert found == {"waiting": (0, 0)}


def test_positions_are_read_from_the_hubs_own_summary_encoding() -> None:
    summary = PendingWorkloadsSummary(
        api_version="visibility.kueue.x-k8s.io/v1beta2",
        items=[
            PendingWorkloadItem(
                metadata=PendingWorkloadMeta(name=name, namespace="ns"),
                priority=0,
                local_queue_name="lq",
                position_in_cluster_queue=index,
                position_in_local_queue=local,
            )
            for index, (name, local) in enumerate([("x", 0), ("y", 0), ("z", 1)])
        ],
    )
    answer = msgspec.json.decode(msgspec.json.encode(summary))
    assert positions_from_summary("cq", answer) == {
        ("ns", "x"): QueuePosition("cq", 0, 0, PositionSource.VISIBILITY),
        ("ns", "y"): QueuePosition("cq", 1, 0, PositionSource.VISIBILITY),
        ("ns", "z"): QueuePosition("cq", 2, 1, PositionSource.VISIBILITY),
    }
