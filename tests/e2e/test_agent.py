"""`fleetq agent` as a real process on worker-1 of the full fleet (4 kwok nodes of 8 GPUs).

The agent gets a ResourceFlavor for the GPU node pool, a ClusterQueue with 32 GPUs and a
LocalQueue, and runs with leader election (its Lease in the test's namespace). It must
(a) report the pool: 4 nodes, 32 GPUs allocatable and free, largest free blocks of 8; and
(b) do what an upstream worker does for MultiKueue: given a Workload and a suspended Job
created the way the manager creates its remote copies (origin label, prebuilt-workload
label), admit the Workload, unsuspend the Job, and once the pods run on GPU nodes the
report's free GPUs drop, then recover when they finish and the Workload is Finished.
A clean stop leaves the report marked Reporting=False.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet_crds import install_crds
from devfleet.polling import until
from devfleet.ports import allocate_ports
from tests.builders import Workload, kwok_job
from tests.e2e.gpu_queue import GPU, POOL_LABEL, gpu_queue_manifests

NamespaceFactory = Callable[..., str]
REPO = Path(__file__).resolve().parents[2]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
FLEETQ = ("fleetq.dev", "v1alpha1")
FINALIZER = "kueue.x-k8s.io/resource-in-use"


class AgentProcess:
    """`fleetq agent` against one cluster, with its log kept for failure messages."""

    def __init__(self, member: ClusterAccess, workdir: Path, namespace: str, name: str) -> None:
        self.member = member
        self.name = name
        self.log_path = workdir / "agent.log"
        self.config_path = workdir / "agent-config.yaml"
        self.config_path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": True, "resourceNamespace": namespace},
                    "clientConnection": {"qps": 50, "burst": 100},
                }
            )
        )
        self.health_port, self.metrics_port = allocate_ports(2)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cli.main",
                    "agent",
                    "--kubeconfig",
                    str(self.member.kubeconfig),
                    "--config",
                    str(self.config_path),
                    "--cluster-name",
                    self.name,
                    "--health-port",
                    str(self.health_port),
                    "--metrics-port",
                    str(self.metrics_port),
                ],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"the agent exited:\n{self.log_tail()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(
                    f"http://127.0.0.1:{self.health_port}/readyz", timeout=2
                ) as reply,
            ):
                return bool(reply.status == 200)
            return False

        until(ready, "the agent's /readyz", timeout=60)

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as reply:
            return str(reply.read().decode())

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return None

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])


class Worker:
    """Typed-enough access to worker-1's objects for the test."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.namespace = namespace

    def create(self, plural: str, body: dict[str, Any], namespaced: bool = False) -> None:
        body = {"apiVersion": "/".join(KUEUE), **body}
        if namespaced:
            self.custom.create_namespaced_custom_object(*KUEUE, self.namespace, plural, body)
        else:
            self.custom.create_cluster_custom_object(*KUEUE, plural, body)

    def workload(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self.custom.get_namespaced_custom_object(
            *KUEUE, self.namespace, "workloads", name
        )
        return result

    def report(self, name: str) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.custom.get_cluster_custom_object(
                *FLEETQ, "workercapacities", name
            )
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return result

    def strip_finalizers_and_delete(self, plural: str, name: str) -> None:
        with contextlib.suppress(client.ApiException):
            self.custom.patch_cluster_custom_object(
                *KUEUE, plural, name, {"metadata": {"finalizers": None}}
            )
        with contextlib.suppress(client.ApiException):
            self.custom.delete_cluster_custom_object(*KUEUE, plural, name)


def _flavor(report: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    for entry in ((report or {}).get("status") or {}).get("flavors") or ():
        if entry["name"] == name:
            return dict(entry)
    return None


def _condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond["type"] == type_:
            return dict(cond)
    return None


@pytest.fixture
def agent_world(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory, tmp_path: Path
) -> Iterator[tuple[Worker, AgentProcess, str, str]]:
    member = full_fleet.cluster("worker-1")
    install_crds(member)
    namespace = namespace_factory("agent", clusters=(member,))
    suffix = namespace.rpartition("-")[2]
    flavor, cq = f"gpu-{suffix}", f"gpus-{suffix}"
    agent = AgentProcess(member, tmp_path, namespace, f"worker-1-{suffix}")
    with member.api_client() as api_client:
        worker = Worker(api_client, namespace)
        flavor_body, cq_body, lq_body = gpu_queue_manifests(flavor, cq, namespace, gpus=32)
        worker.create("resourceflavors", flavor_body)
        worker.create("clusterqueues", cq_body)
        worker.create("localqueues", lq_body, namespaced=True)
        try:
            agent.start()
            agent.wait_ready()
            yield worker, agent, flavor, cq
        finally:
            agent.stop()
            for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
                worker.strip_finalizers_and_delete(plural, name)
            with contextlib.suppress(client.ApiException):
                worker.custom.delete_cluster_custom_object(*FLEETQ, "workercapacities", agent.name)


def _remote_copies(namespace: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Job and its Workload as the MultiKueue manager creates them on a worker."""
    workload_name = f"job-{name}-e2e01"
    job = (
        kwok_job(name, gpus_per_pod=4, pods=2, run_seconds=4)
        .namespace(namespace)
        .queue("team")
        .multikueue_origin("e2e-manager")
        .prebuilt_workload(workload_name)
        .suspend()
        .obj()
    )
    workload = (
        Workload(workload_name)
        .multikueue_origin("e2e-manager")
        .queue("team")
        .pod_set("main", 2, template=job["spec"]["template"])
    )
    return job, workload.obj()


def test_the_agent_reports_the_gpu_pool_and_admits_a_dispatched_job(
    agent_world: tuple[Worker, AgentProcess, str, str],
) -> None:
    worker, agent, flavor, _ = agent_world

    # (a) The pool as the hub will see it.
    def pool() -> dict[str, Any] | None:
        entry = _flavor(worker.report(agent.name), flavor)
        return entry if entry and (entry.get("free") or {}).get(GPU) == "32" else None

    entry = until(pool, "the GPU pool in the report")
    assert entry["nodeCount"] == 4
    assert entry["allocatable"][GPU] == "32"
    assert [block[GPU] for block in entry["largestFreeBlocks"]] == ["8"] * 4
    report = worker.report(agent.name)
    assert report is not None and report["spec"]["clusterName"] == agent.name
    running = _condition(report, "Reporting")
    assert running is not None and running["status"] == "True"

    # (b) The manager's remote copies: the agent admits the Workload, unsuspends the Job.
    job, workload = _remote_copies(worker.namespace, "train")
    worker.create("workloads", workload, namespaced=True)
    worker.batch.create_namespaced_job(worker.namespace, job)
    name = workload["metadata"]["name"]

    admitted = until(
        lambda: _condition(worker.workload(name), "Admitted") or None, "the Workload admitted"
    )
    assert admitted["status"] == "True"
    until(
        lambda: not worker.batch.read_namespaced_job("train", worker.namespace).spec.suspend,
        "the Job unsuspended",
    )

    # While the pods hold their GPUs, the report shows them taken.
    def busy() -> dict[str, Any] | None:
        entry = _flavor(worker.report(agent.name), flavor)
        return entry if entry and entry["free"][GPU] == "24" else None

    busy_entry = until(busy, "8 GPUs taken in the report")
    assert busy_entry["requested"][GPU] == "8"

    pods = worker.core.list_namespaced_pod(worker.namespace, label_selector="job-name=train").items
    assert len(pods) == 2
    assert all((p.spec.node_name or "").startswith("worker-1-gpu-") for p in pods)
    assert all(p.spec.node_selector.get(POOL_LABEL) == "gpu" for p in pods)

    # They finish: the GPUs come back and the Workload is Finished.
    until(pool, "the GPUs free again")
    finished = until(lambda: _condition(worker.workload(name), "Finished"), "the Workload finished")
    assert finished["status"] == "True"
    assert "fleetq_agent_capacity_report_writes_total" in agent.metrics()

    # A clean stop marks the last report as no longer current.
    assert agent.stop() == 0, agent.log_tail()
    stopped = _condition(worker.report(agent.name), "Reporting")
    assert stopped is not None and (stopped["status"], stopped["reason"]) == (
        "False",
        "AgentStopped",
    )
    events = [json.loads(line) for line in agent.log_tail(400).splitlines() if line[:1] == "{"]
    assert any(e.get("event") == "agent.report_marked_stopped" for e in events)
