"""Reading a WorkerCapacity once into integers, and judging its freshness."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.codec import decode
from core.api.worker_capacity import MAX_REPORTED_CLUSTER_QUEUES, WorkerCapacity
from core.engine.dispatch.capacity_snapshot import (
    MAX_REPORT_AGE_SECONDS,
    InvalidReportError,
    snapshot_from_report,
)

OBSERVED = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def report(status: dict[str, Any]) -> WorkerCapacity:
    return decode(
        WorkerCapacity,
        {
            "metadata": {"name": "worker-1"},
            "spec": {"clusterName": "worker-1"},
            "status": {"observedTime": "2025-03-01T10:00:00Z", **status},
        },
    )


def test_quantities_become_engine_integers_and_quota_keeps_its_order() -> None:
    snapshot = snapshot_from_report(
        report(
            {
                "flavors": [
                    {
                        "name": "h100",
                        "nodeCount": 2,
                        "free": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 8},
                        "largestFreeBlocks": [{"cpu": "1", "nvidia.com/gpu": "8"}, {"cpu": "500m"}],
                    }
                ],
                "clusterQueues": [
                    {
                        "name": "team-a",
                        "quota": [
                            {"name": "spot", "resources": {"cpu": "10"}},
                            {"name": "on-demand", "resources": {"cpu": "20"}},
                        ],
                        "usage": [{"name": "spot", "resources": {"cpu": "2500m"}}],
                        "pendingWorkloads": 3,
                    }
                ],
            }
        )
    )
    flavor = snapshot.flavors["h100"]
    assert flavor.free == {"cpu": 1500, "memory": 1024**3, "nvidia.com/gpu": 8}
    assert flavor.blocks == ({"cpu": 1000, "nvidia.com/gpu": 8}, {"cpu": 500})
    assert not flavor.has_unreported_nodes
    queue = snapshot.cluster_queues["team-a"]
    assert [name for name, _ in queue.quota] == ["spot", "on-demand"]
    assert queue.reserved("spot", "cpu") == 2500
    assert queue.reserved("on-demand", "cpu") == 0
    assert queue.pending_workloads == 3
    assert snapshot.observed_at == OBSERVED.timestamp()
    assert snapshot.cluster_name == "worker-1"
    assert not snapshot.cluster_queues_truncated


def test_a_quantity_no_agent_would_write_rejects_the_whole_report() -> None:
    bad = report({"flavors": [{"name": "h100", "free": {"cpu": "lots"}}]})
    with pytest.raises(InvalidReportError, match="flavor h100: cpu"):
        snapshot_from_report(bad)


def test_freshness_needs_an_observed_time_a_reporting_agent_and_a_recent_report() -> None:
    now = OBSERVED.timestamp()
    fresh = snapshot_from_report(report({}))
    assert fresh.is_fresh(now + MAX_REPORT_AGE_SECONDS)
    assert not fresh.is_fresh(now + MAX_REPORT_AGE_SECONDS + 1)
    stopped = snapshot_from_report(
        report(
            {
                "conditions": [
                    {
                        "type": "Reporting",
                        "status": "False",
                        "reason": "AgentStopping",
                        "lastTransitionTime": "2025-03-01T10:00:00Z",
                    }
                ]
            }
        )
    )
    assert not stopped.is_fresh(now)
    never = snapshot_from_report(decode(WorkerCapacity, {"metadata": {"name": "w"}}))
    assert never.observed_at is None and not never.is_fresh(now)


def test_a_report_at_its_cluster_queue_cap_is_marked_truncated() -> None:
    queues = [{"name": f"cq-{i:03}"} for i in range(MAX_REPORTED_CLUSTER_QUEUES)]
    assert snapshot_from_report(report({"clusterQueues": queues})).cluster_queues_truncated
