"""The views' content: bars from capacity reports, why a workload waits, its story."""

from __future__ import annotations

from datetime import timedelta

from core.api.codec import decode
from core.api.worker_capacity import WorkerCapacity
from hub.dashboard.source import WorkerSummary
from hub.dashboard.views import flavors_view, fleet_view, queues_view, workload_view, workloads_view
from tests.unit.hub.dashboard.doubles import NOW, ListSource, condition, workload


def report() -> WorkerCapacity:
    return decode(
        WorkerCapacity,
        {
            "apiVersion": "fleetq.dev/v1alpha1",
            "kind": "WorkerCapacity",
            "metadata": {"name": "w1"},
            "spec": {"clusterName": "w1"},
            "status": {
                "observedTime": (NOW - timedelta(seconds=20)).isoformat(),
                "flavors": [
                    {
                        "name": "cpu-pool",
                        "nodeCount": 2,
                        "allocatable": {"cpu": "8", "memory": "16Gi"},
                        "requested": {"cpu": "2500m"},
                        "free": {"cpu": "5500m", "memory": "16Gi"},
                        "largestFreeBlocks": [{"cpu": "3", "memory": "8Gi"}],
                    }
                ],
            },
        },
    )


def test_fleet_shows_connection_report_age_bars_and_running_jobs() -> None:
    admitted = [
        condition("QuotaReserved", "True", "QuotaReserved"),
        condition("Admitted", "True", "Admitted"),
    ]
    source = ListSource(
        wls=[workload("ns", "a", conditions=admitted, cluster_name="w1"), workload("ns", "b")],
        worker_list=[
            WorkerSummary("w1", True, "Connected", "", NOW, report()),
            WorkerSummary("w2", False, "Failed", "connection refused", NOW, None),
        ],
    )
    body = fleet_view(source, NOW)
    w1, w2 = body["workers"]
    assert (w1["connected"], w1["reportAgeSeconds"], w1["running"]) == (True, 20.0, 1)
    cpu = next(b for b in w1["flavors"][0]["bars"] if b["resource"] == "cpu")
    assert (cpu["total"], cpu["used"], cpu["free"]) == (8.0, 2.5, 5.5)
    assert w1["flavors"][0]["largestFreeBlocks"] == [{"cpu": "3", "memory": "8Gi"}]
    assert (w2["connected"], w2["reason"], w2["reportAgeSeconds"]) == (
        False,
        "connection refused",
        None,
    )
    assert fleet_view(ListSource(worker_list=None), NOW)["leader"] is False


def test_workloads_say_why_they_wait_and_where_they_run() -> None:
    waiting = [condition("QuotaReserved", "False", "Pending", "insufficient quota for cpu")]
    source = ListSource(
        lqs=[
            {"metadata": {"namespace": "ns", "name": "user-queue"}, "spec": {"clusterQueue": "cq"}}
        ],
        wls=[workload("ns", "waits", conditions=waiting), workload("other", "x")],
        positions={"ns/waits": 3},
    )
    body = workloads_view(source, NOW)
    assert body["counts"] == {"pending": 2} and body["total"] == 2
    row = next(r for r in body["rows"] if r["name"] == "waits")
    assert row["why"] == "insufficient quota for cpu"
    assert (row["clusterQueue"], row["position"], row["priority"]) == ("cq", 3, 5)
    assert row["waitedSeconds"] == 60.0
    assert [r["name"] for r in workloads_view(source, NOW, "other")["rows"]] == ["x"]


def test_workload_detail_tells_its_story_and_yaml() -> None:
    done = [
        condition("QuotaReserved", "True", "QuotaReserved"),
        condition("Admitted", "True", "Admitted"),
        condition("Finished", "True", "Succeeded", "Job finished successfully"),
    ]
    source = ListSource(wls=[workload("ns", "done", conditions=done, cluster_name="w1")])
    body = workload_view(source, "ns", "done", NOW)
    assert body is not None
    steps = [step["step"] for step in body["timeline"]]
    assert steps[0] == "Created" and "Finished" in " ".join(steps)
    assert body["summary"]["state"] == "finished" and body["summary"]["worker"] == "w1"
    assert "queueName: user-queue" in body["yaml"]
    assert workload_view(source, "ns", "missing", NOW) is None


def test_queues_and_flavors() -> None:
    source = ListSource(
        cqs=[
            {
                "metadata": {"name": "cq"},
                "spec": {
                    "cohortName": "org",
                    "stopPolicy": "Hold",
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}
                            ],
                        }
                    ],
                },
                "status": {
                    "pendingWorkloads": 2,
                    "conditions": [{"type": "Active", "status": "False", "reason": "Stopped"}],
                    "flavorsReservation": [
                        {"name": "f", "resources": [{"name": "cpu", "total": "6", "borrowed": "2"}]}
                    ],
                },
            }
        ],
        flavors=[{"metadata": {"name": "f"}, "spec": {"nodeLabels": {"pool": "a"}}}],
        worker_list=[WorkerSummary("w1", True, "Connected", "", NOW, report())],
    )
    [cq] = queues_view(source)["clusterQueues"]
    assert (cq["active"], cq["reason"], cq["stopPolicy"], cq["pending"]) == (
        False,
        "Stopped",
        "Hold",
        2,
    )
    assert cq["usage"] == [
        {
            "flavor": "f",
            "resource": "cpu",
            "nominal": 4.0,
            "reserved": 6.0,
            "borrowed": 2.0,
            "nominalText": "4",
            "reservedText": "6",
        }
    ]
    [flavor] = flavors_view(source)["flavors"]
    assert flavor["nodeLabels"] == {"pool": "a"} and flavor["workers"] == []


def test_groups_count_every_workload_by_queue_state_and_worker_beyond_the_rows_sent() -> None:
    from hub.dashboard import views

    admitted = [
        condition("QuotaReserved", "True", "QuotaReserved"),
        condition("Admitted", "True", "Admitted"),
    ]
    source = ListSource(
        lqs=[
            {"metadata": {"namespace": "ns", "name": "gpu-q"}, "spec": {"clusterQueue": "gpu"}},
            {"metadata": {"namespace": "ns", "name": "cpu-q"}, "spec": {"clusterQueue": "cpu"}},
        ],
        wls=[
            *(workload("ns", f"p{i}", queue="gpu-q") for i in range(3)),
            workload("ns", "run-1", queue="gpu-q", conditions=admitted, cluster_name="w1"),
            workload("ns", "run-2", queue="cpu-q", conditions=admitted, cluster_name="w2"),
        ],
    )
    old = views.WORKLOAD_ROWS_LIMIT
    views.WORKLOAD_ROWS_LIMIT = 2
    try:
        body = workloads_view(source, NOW)
    finally:
        views.WORKLOAD_ROWS_LIMIT = old
    assert len(body["rows"]) == 2 and body["total"] == 5
    groups = body["groups"]
    assert groups["clusterQueue"] == {"gpu": 4, "cpu": 1}
    assert groups["localQueue"] == {"gpu-q": 4, "cpu-q": 1}
    assert groups["state"] == {"pending": 3, "admitted": 2} == body["counts"]
    assert groups["worker"] == {"": 3, "w1": 1, "w2": 1}
    one_namespace = workloads_view(source, NOW, "elsewhere")
    assert one_namespace["groups"]["state"] == {} and one_namespace["total"] == 0
