"""`fleetq dev demo --short`, run as a user runs it (a subprocess), checked from its output,
from the JSON summary it writes, and from the machine afterwards.

The demo brings up its own fleet ("demo", under a FLEETQ_HOME of the test's own, so it
never meets a developer's kept demo fleet), installs the charts with helm, joins the
workers from clusters.example.yaml, runs the hub and agents with the charts' tokens and
submits GPU and CPU jobs on the manager, one of them a JobSet, and a small inference
Deployment on worker-2. The test asserts that:
- every job succeeded, and jobs ran on both workers;
- the Deployment's two replicas were queued by worker-2's agent and serve on its CPU nodes;
- the JobSet (a driver and 4 GPU workers) ran whole on exactly one worker, and its worker
  pods spread over more than one of that worker's nodes;
- GPU jobs' pods ran on GPU nodes and CPU jobs' pods on CPU nodes (node pools as the
  demo read them from the workers while the pods ran);
- no process refused a request its chart's RBAC should have allowed;
- teardown left nothing: the demo's processes are gone, no port of its clusters or
  processes answers, no process mentions the fleet's folder, and the folder is removed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devfleet.process_group import is_alive
from devfleet.toolchain import missing_binaries

REPO = Path(__file__).resolve().parents[2]
DEMO_TIMEOUT_SECONDS = 540
WORKERS = {"worker-1", "worker-2"}


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _processes_mentioning(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    missing = missing_binaries(
        ["kubernetes", "etcd", "kwok", "helm", "jobset", "training-operator", "mpi-operator"]
    )
    if missing:
        pytest.fail(f"tools not built ({', '.join(missing)}); run `make tools`", pytrace=False)
    workdir = tmp_path_factory.mktemp("demo")
    summary_file = workdir / "summary.json"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update({"FLEETQ_HOME": str(workdir / "home"), "PYTHONUNBUFFERED": "1"})
    command = [
        sys.executable,
        "-m",
        "cli.main",
        "dev",
        "demo",
        "--short",
        "--summary-file",
        str(summary_file),
    ]
    result = subprocess.run(
        command,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_SECONDS,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the demo exited {result.returncode}:\n{output[-6000:]}"
    assert summary_file.exists(), output[-3000:]
    return output, json.loads(summary_file.read_text())


def test_the_demo_spreads_gpu_and_cpu_jobs_and_a_jobset_over_both_workers_and_all_complete(
    demo_run: tuple[str, dict[str, Any]],
) -> None:
    output, summary = demo_run
    jobs = summary["jobs"]
    assert len(jobs) >= 5
    assert {job["kind"] for job in jobs} == {"gpu", "cpu"}
    assert {job["priority"] for job in jobs} >= {"high", "low"}
    for job in jobs:
        name = f"{job['namespace']}/{job['name']}"
        serving = job["apiKind"] == "Deployment"
        assert job["state"] == ("serving" if serving else "succeeded"), job
        assert job["worker"] in WORKERS, job
        assert job["nodePools"] == [job["kind"]], f"{name} ran on {job['nodes']}"
        assert all(node.startswith(f"{job['worker']}/{job['worker']}-") for node in job["nodes"])
        assert job["queuedSeconds"] is not None and job["ranSeconds"] > 0, job
    assert {job["worker"] for job in jobs} == WORKERS
    assert {job["apiKind"] for job in jobs} == {"Job", "JobSet", "PyTorchJob", "Deployment"}

    (pytorchjob,) = [job for job in jobs if job["apiKind"] == "PyTorchJob"]
    assert (pytorchjob["namespace"], pytorchjob["name"]) == ("team-b", "llm-finetune-pt")
    assert pytorchjob["asks"] == "1 CPU + 4x4 GPU"
    # Master and workers all on the one worker the Workload was placed on.
    assert {node.split("/", 1)[0] for node in pytorchjob["nodes"]} == {pytorchjob["worker"]}
    assert len(pytorchjob["nodes"]) > 1, pytorchjob
    (inference,) = [job for job in jobs if job["apiKind"] == "Deployment"]
    assert (inference["name"], inference["worker"], inference["pods"]) == (
        "embed-server",
        "worker-2",
        2,
    )
    assert len(inference["nodes"]) >= 1 and inference["nodePools"] == ["cpu"], inference

    (jobset,) = [job for job in jobs if job["apiKind"] == "JobSet"]
    assert (jobset["namespace"], jobset["name"]) == ("team-a", "llm-pretrain-js")
    assert jobset["state"] == "succeeded", jobset
    assert jobset["asks"] == "1 CPU + 4x4 GPU"
    assert (jobset["driverPods"], jobset["pods"], jobset["perPod"]) == (1, 4, 4)
    # Exactly one worker: the pods seen on any worker were all on the one it was sent to.
    assert {node.split("/", 1)[0] for node in jobset["nodes"]} == {jobset["worker"]}, jobset
    by_replicated_job = jobset["replicatedJobNodes"]
    assert set(by_replicated_job) == {"driver", "workers"}, jobset
    assert len(by_replicated_job["driver"]) == 1, jobset
    assert len(by_replicated_job["workers"]) > 1, f"the JobSet's workers did not spread: {jobset}"
    assert set(jobset["nodes"]) == {*by_replicated_job["driver"], *by_replicated_job["workers"]}

    assert f"{len(jobs)}/{len(jobs)} jobs succeeded" in output
    assert "summary: where each job ran" in output
    assert "1 CPU + 4x4 GPU" in output and "jobset" in output
    assert "helm installed fleetq-hub" in output and "helm installed fleetq-worker" in output
    assert "fleetq join -f clusters.example.yaml" in output
    assert output.count("no request refused by its chart's RBAC") == 3, output[-3000:]


def test_the_demo_leaves_nothing_running(demo_run: tuple[str, dict[str, Any]]) -> None:
    output, summary = demo_run
    teardown = summary["teardown"]
    assert teardown == {
        "uncleanExits": [],
        "leftoverPorts": [],
        "alivePids": [],
        "clusterPorts": teardown["clusterPorts"],
        "fleetDirRemoved": True,
    }
    assert "nothing left running" in output
    pids = [process["pid"] for process in summary["processes"].values()]
    assert len(pids) == 3 and not [pid for pid in pids if is_alive(pid)]
    ports = [*teardown["clusterPorts"], *summary["processPorts"]]
    assert len(ports) == 10  # 3 clusters; health and metrics of 3 processes; the dashboard
    assert summary["dashboardUrl"].rstrip("/").rsplit(":", 1)[1] in map(str, ports)
    assert [port for port in ports if _port_answers(port)] == []
    assert not Path(summary["fleetDir"]).exists()
    assert _processes_mentioning(summary["fleetDir"]) == []
