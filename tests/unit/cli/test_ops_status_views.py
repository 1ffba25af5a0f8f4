"""How `fleetq status` turns MultiKueueClusters, reports and queues into rows and documents."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from cli.main import build_parser
from cli.ops.fleet_status import (
    WorkerReachability,
    cluster_queue_view,
    worker_view,
)
from cli.ops.output_format import OutputFormat, age_text, print_document
from cli.ops.status_command import queue_state, quota_text, worker_rows
from core.api.cluster_queue import ClusterQueue
from core.api.codec import decode
from core.api.multikueue import MultiKueueCluster
from core.api.worker_capacity import WorkerCapacity

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def cluster(active: dict[str, Any] | None) -> MultiKueueCluster:
    return decode(
        MultiKueueCluster,
        {
            "metadata": {"name": "gpu-east"},
            "spec": {"clusterSource": {"kubeConfig": {"location": "gpu-east-kubeconfig"}}},
            "status": {"conditions": [active] if active else []},
        },
    )


ACTIVE = {
    "type": "Active",
    "status": "True",
    "reason": "Active",
    "message": "Connected",
    "lastTransitionTime": NOW.isoformat(),
}


def report(age: timedelta) -> WorkerCapacity:
    return decode(
        WorkerCapacity,
        {
            "spec": {"clusterName": "gpu-east"},
            "status": {
                "observedTime": (NOW - age).isoformat(),
                "flavors": [
                    {
                        "name": "a100",
                        "nodeCount": 4,
                        "allocatable": {"cpu": "64", "nvidia.com/gpu": "32"},
                        "requested": {"cpu": "10", "nvidia.com/gpu": "24"},
                        "free": {"cpu": "54", "nvidia.com/gpu": "8"},
                    },
                    {"name": "cpu-only", "nodeCount": 2, "allocatable": {"cpu": "32"}},
                ],
            },
        },
    )


def test_a_reporting_worker_gets_a_row_per_flavor_with_usage_and_age() -> None:
    view = worker_view(cluster(ACTIVE), report(timedelta(seconds=75)), NOW)
    assert view.report_age_seconds == 75
    assert worker_rows(view) == [
        (
            "gpu-east",
            "yes",
            "1m15s",
            "a100",
            "4",
            "cpu 10/64\nnvidia.com/gpu 24/32",
            "cpu 54\nnvidia.com/gpu 8",
        ),
        ("", "", "", "cpu-only", "2", "cpu 0/32", ""),
    ]


def test_an_unreachable_worker_gets_one_row_that_says_so() -> None:
    inactive = dict(ACTIVE, status="False", reason="ClientConnectionFailed")
    problem = WorkerReachability(False, "unreachable", "gpu-east: cannot reach the API server")
    view = worker_view(cluster(inactive), problem, NOW)
    assert view.flavors == [] and view.report_age_seconds is None
    assert worker_rows(view) == [
        ("gpu-east", "no\nClientConnectionFailed", "unreachable", "", "", "", "")
    ]
    never = worker_view(cluster(None), WorkerReachability(True, "no report", "none"), NOW)
    assert worker_rows(never)[0][:3] == ("gpu-east", "unknown", "no report")


def test_cluster_queue_usage_is_shown_against_nominal_quota() -> None:
    queue = decode(
        ClusterQueue,
        {
            "metadata": {"name": "research"},
            "spec": {
                "cohortName": "all",
                "stopPolicy": "Hold",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "a100",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "64"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": "16"},
                                ],
                            }
                        ],
                    }
                ],
            },
            "status": {
                "pendingWorkloads": 3,
                "admittedWorkloads": 2,
                "flavorsUsage": [
                    {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "12"}]}
                ],
            },
        },
    )
    view = cluster_queue_view(queue)
    assert (view.cohort, view.pending, view.admitted) == ("all", 3, 2)
    assert quota_text(view) == "a100: cpu 0/64, nvidia.com/gpu 12/16"
    assert queue_state(view.stop_policy, view.active) == "stopped (Hold)"
    assert queue_state("None", "FlavorNotFound") == "inactive (FlavorNotFound)"
    assert queue_state("None", "Ready") == "active"


def test_documents_keep_camel_case_keys_and_rfc3339_times() -> None:
    view = worker_view(cluster(ACTIVE), report(timedelta(seconds=5)), NOW)
    out = io.StringIO()
    print_document(view, OutputFormat.JSON, out)
    document = json.loads(out.getvalue())
    assert document["lastReport"] == "2026-01-01T11:59:55Z"
    assert document["reportAgeSeconds"] == 5
    out = io.StringIO()
    print_document(view, OutputFormat.YAML, out)
    assert yaml.safe_load(out.getvalue())["flavors"][0]["flavor"] == "a100"
    assert age_text(None) == "-" and age_text(3725) == "1h2m"


def test_unknown_output_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["status", "-o", "xml"])
    assert exited.value.code == 2
    assert "unknown output format 'xml' (choose from table, json, yaml)" in capsys.readouterr().err
