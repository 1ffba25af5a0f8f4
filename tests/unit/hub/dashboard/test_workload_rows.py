"""The workloads table's rows are read again only for the Workloads whose version moved."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hub.dashboard.views import fleet_view, workloads_view
from hub.dashboard.workload_rows import WorkloadRows
from tests.unit.hub.dashboard.doubles import NOW, ListSource, condition, workload

ADMITTED = [
    condition("QuotaReserved", "True", "QuotaReserved"),
    condition("Admitted", "True", "Admitted"),
]
WAITING = [condition("QuotaReserved", "False", "Pending", "insufficient quota for cpu")]


def versioned(raw: dict[str, Any], version: int) -> dict[str, Any]:
    raw["metadata"]["resourceVersion"] = str(version)
    return raw


def admitted(name: str, version: int, cluster: str = "") -> dict[str, Any]:
    raw = versioned(workload("ns", name, conditions=ADMITTED, cluster_name=cluster), version)
    raw["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return raw


def fleet_of(count: int) -> ListSource:
    return ListSource(
        lqs=[
            {"metadata": {"namespace": "ns", "name": "user-queue"}, "spec": {"clusterQueue": "cq"}}
        ],
        wls=[
            versioned(workload("ns", f"w{i}", conditions=WAITING), 1)
            if i % 2
            else admitted(f"w{i}", 1)
            for i in range(count)
        ],
        positions={f"ns/w{i}": i for i in range(count) if i % 2},
    )


def test_a_rebuild_after_one_workload_changed_decodes_only_that_one() -> None:
    source, rows = fleet_of(50), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    assert rows.decodes == 50
    source.wls[7] = admitted("w7", 2, "w1")
    body = workloads_view(source, NOW, rows=rows)
    assert rows.decodes == 51
    assert next(r for r in body["rows"] if r["name"] == "w7")["state"] == "admitted"


def test_the_fleet_and_workloads_views_share_the_rows_decoded_once() -> None:
    source, rows = fleet_of(20), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    fleet_view(source, NOW, rows)
    workloads_view(source, NOW, "ns", rows=rows)
    assert rows.decodes == 20


def test_deleted_workloads_are_forgotten_and_new_ones_read() -> None:
    source, rows = fleet_of(10), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    del source.wls[:4]
    source.wls.append(versioned(workload("ns", "new"), 1))
    body = workloads_view(source, NOW, rows=rows)
    assert len(rows) == 7 and rows.decodes == 11
    assert body["total"] == 7 and {r["name"] for r in body["rows"]} >= {"new"}


def test_a_workload_without_a_resource_version_is_read_on_every_build() -> None:
    source, rows = ListSource(wls=[workload("ns", "a")]), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    workloads_view(source, NOW, rows=rows)
    assert rows.decodes == 2


def test_kept_rows_give_the_same_view_as_a_fresh_build() -> None:
    source, rows = fleet_of(30), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    source.wls[3] = admitted("w3", 2, "w2")
    del source.wls[10]
    assert workloads_view(source, NOW, rows=rows) == workloads_view(source, NOW)
    assert workloads_view(source, NOW, "ns", rows=rows) == workloads_view(source, NOW, "ns")
    assert fleet_view(source, NOW, rows) == fleet_view(source, NOW)


def test_kept_rows_still_count_durations_up_to_the_build() -> None:
    source, rows = fleet_of(2), WorkloadRows()
    before = workloads_view(source, NOW, rows=rows)["rows"]
    later = workloads_view(source, NOW + timedelta(seconds=90), rows=rows)["rows"]
    assert rows.decodes == 2
    waiting = [(r["name"], r["waitedSeconds"]) for r in (*before, *later) if r["name"] == "w1"]
    running = [(r["name"], r["ranSeconds"]) for r in (*before, *later) if r["name"] == "w0"]
    assert waiting == [("w1", 60.0), ("w1", 150.0)]
    assert running == [("w0", 30.0), ("w0", 120.0)]


def test_a_local_queue_pointed_elsewhere_moves_kept_pending_rows_to_its_queue() -> None:
    source, rows = fleet_of(4), WorkloadRows()
    workloads_view(source, NOW, rows=rows)
    source.lqs[0] = {
        "metadata": {"namespace": "ns", "name": "user-queue"},
        "spec": {"clusterQueue": "other"},
    }
    body = workloads_view(source, NOW, rows=rows)
    assert rows.decodes == 4
    assert list(body["groups"]["clusterQueue"].items()) == [("cq", 2), ("other", 2)]
    pending = {r["name"]: r["clusterQueue"] for r in body["rows"] if r["state"] == "pending"}
    assert pending == {"w1": "other", "w3": "other"}


def test_group_counts_list_values_in_the_order_rows_first_show_them() -> None:
    source = ListSource(
        wls=[
            workload("ns", "a", queue="q2"),
            workload("ns", "b", queue="q1", conditions=ADMITTED, cluster_name="w9"),
            workload("ns", "c", queue="q2", conditions=ADMITTED, cluster_name="w1"),
            workload("ns", "d", queue="q1"),
        ]
    )
    groups = workloads_view(source, NOW)["groups"]
    assert list(groups["localQueue"].items()) == [("q2", 2), ("q1", 2)]
    assert list(groups["worker"].items()) == [("", 2), ("w9", 1), ("w1", 1)]
    assert list(groups["state"].items()) == [("pending", 2), ("admitted", 2)]
