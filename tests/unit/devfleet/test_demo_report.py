"""What the demo reads of a JobSet (its Workload, its pods) and how it reports it."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from devfleet.demo_jobs import DemoJob, job_mix
from devfleet.demo_report import (
    live_table,
    nodes_shown,
    summary_document,
    summary_table,
    worker_table,
)
from devfleet.demo_watch import FleetObserver, JobRecord, JobState


def _mix() -> dict[str, DemoJob]:
    return {job.name: job for job in job_mix(short=True)}


def _pod(namespace: str, node: str | None, labels: dict[str, str]) -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(namespace=namespace, labels=labels),
        spec=SimpleNamespace(node_name=node),
    )


def _jobset_pod(node: str, replicated: str, index: int) -> Any:
    return _pod(
        "team-a",
        node,
        {
            "jobset.sigs.k8s.io/jobset-name": "llm-pretrain-js",
            "jobset.sigs.k8s.io/replicatedjob-name": replicated,
            "job-name": f"llm-pretrain-js-{replicated}-{index}",
        },
    )


class _Core:
    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods

    def list_namespaced_pod(self, namespace: str, **_: Any) -> Any:
        return SimpleNamespace(items=[p for p in self.pods if p.metadata.namespace == namespace])


def _observer(records: dict[str, JobRecord]) -> FleetObserver:
    worker = SimpleNamespace(name="worker-1")
    fleet = SimpleNamespace(workers=[worker], manager=SimpleNamespace(name="manager"), all=[])
    observer = FleetObserver(fleet, records, time.monotonic())  # type: ignore[arg-type]
    observer._clients = {"worker-1": object(), "manager": object()}
    observer._pools = {"worker-1": {f"worker-1-gpu-{i}": "gpu" for i in range(4)}}
    return observer


def test_a_jobsets_pods_count_for_the_jobset_not_for_its_child_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubernetes import client

    jobs = _mix()
    records = {jobs[n].key: JobRecord(jobs[n]) for n in ("llm-pretrain-js", "pretrain-llm")}
    pods = [
        _jobset_pod("worker-1-gpu-0", "driver", 0),
        *(_jobset_pod(f"worker-1-gpu-{i % 3}", "workers", i) for i in range(4)),
        _jobset_pod("", "workers", 9),  # not scheduled yet: no node
        _pod("team-a", "worker-1-gpu-3", {"job-name": "pretrain-llm"}),
        _pod("team-a", "worker-1-gpu-3", {"app": "unrelated"}),
    ]
    monkeypatch.setattr(client, "CoreV1Api", lambda api_client: _Core(pods))
    observer = _observer(records)
    monkeypatch.setattr(observer, "_workloads", lambda namespace: [])
    observer.observe()
    jobset = records["team-a/llm-pretrain-js"]
    assert jobset.nodes == {f"worker-1/worker-1-gpu-{i}" for i in range(3)}
    assert jobset.pools == {"gpu"}
    assert jobset.replicated_nodes == {
        "driver": {"worker-1/worker-1-gpu-0"},
        "workers": {f"worker-1/worker-1-gpu-{i}" for i in range(3)},
    }
    assert records["team-a/pretrain-llm"].nodes == {"worker-1/worker-1-gpu-3"}
    assert records["team-a/pretrain-llm"].replicated_nodes == {}


def _workload(owner_kind: str, owner: str, conditions: list[str], cluster: str = "") -> Any:
    return {
        "metadata": {"ownerReferences": [{"kind": owner_kind, "name": owner}]},
        "status": {
            "clusterName": cluster or None,
            "conditions": [
                {"type": kind, "status": "True", "reason": "Succeeded"} for kind in conditions
            ],
        },
    }


def test_a_jobsets_workload_is_read_by_its_owner_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    jobs = _mix()
    records = {jobs[n].key: JobRecord(jobs[n]) for n in ("llm-pretrain-js", "pretrain-llm")}
    for record in records.values():
        record.state = JobState.SUBMITTED
    monkeypatch.setattr(client, "CoreV1Api", lambda api_client: _Core([]))
    observer = _observer(records)
    workloads = {
        "team-a": [
            _workload("JobSet", "llm-pretrain-js", ["QuotaReserved", "Admitted"], "worker-1"),
            # A Job of the JobSet's name is not the JobSet: left alone.
            _workload("Job", "llm-pretrain-js", ["Finished"], "worker-2"),
            # A JobSet of the Job's name is not the Job.
            _workload("JobSet", "pretrain-llm", ["Finished"], "worker-2"),
        ],
    }
    monkeypatch.setattr(observer, "_workloads", lambda namespace: workloads.get(namespace, []))
    lines = observer.observe()
    jobset = records["team-a/llm-pretrain-js"]
    assert (jobset.state, jobset.worker) == (JobState.RUNNING, "worker-1")
    assert records["team-a/pretrain-llm"].state is JobState.SUBMITTED
    (line,) = lines
    assert line.endswith("] team-a/llm-pretrain-js: submitted -> running on worker-1"), line

    workloads["team-a"] = [_workload("JobSet", "llm-pretrain-js", ["Finished"], "worker-1")]
    observer.observe()
    assert jobset.state is JobState.SUCCEEDED and jobset.finished is not None


def _finished_jobset() -> JobRecord:
    record = JobRecord(_mix()["llm-pretrain-js"], state=JobState.SUCCEEDED, worker="worker-1")
    record.submitted, record.admitted, record.finished = 9.0, 20.0, 26.0
    record.nodes = {f"worker-1/worker-1-gpu-{i}" for i in (0, 1, 3)}
    record.pools = {"gpu"}
    record.replicated_nodes = {
        "workers": {f"worker-1/worker-1-gpu-{i}" for i in (0, 1, 3)},
        "driver": {"worker-1/worker-1-gpu-1"},
    }
    return record


def _text(table: Any) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_the_tables_show_a_jobsets_kind_asks_worker_and_every_node() -> None:
    record = _finished_jobset()
    job = JobRecord(_mix()["pretrain-llm"], state=JobState.SUCCEEDED, worker="worker-2")
    job.nodes = {f"worker-2/worker-2-gpu-{i}" for i in range(4)}
    summary = _text(summary_table([record, job], 30.0))
    (row,) = [line for line in summary.splitlines() if "llm-pretrain-js" in line]
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells == [
        "team-a/llm-pretrain-js",
        "jobset",
        "normal",
        "1 CPU + 4x4 GPU",
        "worker-1",
        "gpu",
        "gpu-0, gpu-1, gpu-3",
        "11s",
        "6s",
        "succeeded",
    ]
    assert "gpu-0, gpu-1, gpu-2, gpu-3" in summary  # no "..." for four nodes
    live = _text(live_table([record, job], 30.0))
    (row,) = [line for line in live.splitlines() if "llm-pretrain-js" in line]
    assert "jobset" in row and "1 CPU + 4x4 GPU" in row and "worker-1" in row
    per_worker = _text(worker_table([record, job], ["worker-1", "worker-2"]))
    (row,) = [line for line in per_worker.splitlines() if "worker-1" in line]
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == [
        "worker-1",
        "1",
        "1",
        "0",
        "1",
        "16",
    ]


def test_nodes_are_shown_without_their_workers_prefix_and_only_once() -> None:
    assert nodes_shown([]) == "-"
    assert nodes_shown(["w/w-gpu-1", "w/w-gpu-0", "w/w-gpu-1"]) == "gpu-0, gpu-1"
    assert nodes_shown(["w/other-node"]) == "other-node"


def test_the_summary_document_carries_a_jobsets_kind_asks_and_nodes_per_replicated_job() -> None:
    (entry,) = summary_document([_finished_jobset()], 30.0)["jobs"]
    assert entry["kind"] == "gpu" and entry["apiKind"] == "JobSet"
    assert (entry["asks"], entry["pods"], entry["perPod"], entry["driverPods"]) == (
        "1 CPU + 4x4 GPU",
        4,
        4,
        1,
    )
    assert entry["worker"] == "worker-1" and entry["state"] == "succeeded"
    assert entry["nodes"] == [f"worker-1/worker-1-gpu-{i}" for i in (0, 1, 3)]
    assert entry["replicatedJobNodes"] == {
        "driver": ["worker-1/worker-1-gpu-1"],
        "workers": [f"worker-1/worker-1-gpu-{i}" for i in (0, 1, 3)],
    }
    assert (entry["queuedSeconds"], entry["ranSeconds"]) == (11.0, 6.0)
    job = JobRecord(_mix()["pretrain-llm"])
    (plain,) = summary_document([job], 0.0)["jobs"]
    assert plain["apiKind"] == "Job" and plain["driverPods"] == 0
    assert "replicatedJobNodes" not in plain
