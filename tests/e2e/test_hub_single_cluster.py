"""`fleetq hub` as a real process, queueing real Jobs on one cluster of the full fleet.

The hub manages worker-1 on its own (no MultiKueue): a ResourceFlavor for the GPU node
pool, a ClusterQueue with 16 GPUs of quota, and three Jobs of 8 GPUs whose pods "run" for a
few seconds on kwok nodes. At most two may run at once; all three complete, on GPU nodes
(the flavor's nodeSelector was injected at start), and the hub's /metrics counts them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet_crds import install_crds
from devfleet.ports import allocate_ports
from tests.builders import kwok_job
from tests.e2e.gpu_queue import POOL_LABEL, gpu_queue_manifests

NamespaceFactory = Callable[..., str]
REPO = Path(__file__).resolve().parents[2]
GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"


@pytest.fixture
def hub_process(full_fleet: RunningFleet, tmp_path: Path) -> Iterator[dict[str, Any]]:
    worker = full_fleet.cluster("worker-1")
    install_crds(worker)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": False},
                "clientConnection": {"qps": 50, "burst": 100},
            }
        )
    )
    health, metrics = allocate_ports(2)
    log = (tmp_path / "hub.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "hub",
            "--config",
            str(config),
            "--kubeconfig",
            str(worker.kubeconfig),
            "--health-port",
            str(health),
            "--metrics-port",
            str(metrics),
            "--no-webhooks",  # Jobs are submitted suspended here
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _wait_ready(health, process, tmp_path / "hub.log")
        yield {"worker": worker, "metrics_port": metrics, "log": tmp_path / "hub.log"}
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _wait_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the hub exited with {process.returncode}:\n{log.read_text()}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply,
        ):
            if reply.status == 200:
                return
        time.sleep(0.3)
    raise AssertionError(f"the hub never became ready:\n{log.read_text()}")


def _create(api: client.CustomObjectsApi, plural: str, body: dict[str, Any], ns: str = "") -> None:
    body = {"apiVersion": f"{GROUP}/{VERSION}", **body}
    if ns:
        api.create_namespaced_custom_object(GROUP, VERSION, ns, plural, body)
    else:
        api.create_cluster_custom_object(GROUP, VERSION, plural, body)


@pytest.fixture
def gpu_queue(
    hub_process: dict[str, Any], namespace_factory: NamespaceFactory
) -> Iterator[tuple[str, str, str]]:
    """A flavor for the GPU pool, a 16-GPU ClusterQueue and a LocalQueue `team`.

    Torn down while the hub still runs, so its finalizers come off as they would in use.
    """
    worker: ClusterAccess = hub_process["worker"]
    namespace = namespace_factory("hub", clusters=(worker,))
    suffix = namespace.rpartition("-")[2]
    flavor, cq = f"gpu-{suffix}", f"gpus-{suffix}"
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        flavor_body, cq_body, lq_body = gpu_queue_manifests(flavor, cq, namespace, gpus=16)
        _create(custom, "resourceflavors", flavor_body)
        _create(custom, "clusterqueues", cq_body)
        _create(custom, "localqueues", lq_body, namespace)
    yield namespace, flavor, cq
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                try:
                    custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
                except client.ApiException:
                    break  # gone: the hub dropped its finalizer
                time.sleep(0.3)
            else:
                with contextlib.suppress(client.ApiException):
                    custom.patch_cluster_custom_object(
                        GROUP, VERSION, plural, name, {"metadata": {"finalizers": None}}
                    )


def test_three_8_gpu_jobs_share_16_gpus_two_at_a_time_and_all_complete(
    hub_process: dict[str, Any], gpu_queue: tuple[str, str, str]
) -> None:
    worker: ClusterAccess = hub_process["worker"]
    namespace, _, cq = gpu_queue
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        batch = client.BatchV1Api(api_client)
        names = [f"train-{i}" for i in range(3)]
        for name in names:
            job = kwok_job(name, gpus_per_pod=8, pods=1, run_seconds=4).queue("team")
            job.suspend()  # no webhook in this test: submit suspended
            batch.create_namespaced_job(namespace, job.obj())

        most_running = 0
        deadline = time.monotonic() + 120
        complete: set[str] = set()
        while time.monotonic() < deadline and len(complete) < len(names):
            running = 0
            for item in batch.list_namespaced_job(namespace).items:
                conditions = item.status.conditions or []
                if any(c.type == "Complete" and c.status == "True" for c in conditions):
                    complete.add(item.metadata.name)
                elif item.spec.suspend is False:
                    running += 1
            most_running = max(most_running, running)
            time.sleep(0.3)
        assert complete == set(names), f"completed: {sorted(complete)}"
        assert most_running == 2, f"at most two 8-GPU jobs fit in 16 GPUs; saw {most_running}"

        pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
        nodes = {pod.spec.node_name for pod in pods if pod.spec.node_name}
        assert nodes and all(node.startswith("worker-1-gpu-") for node in nodes)
        assert all(pod.spec.node_selector == {POOL_LABEL: "gpu"} for pod in pods)
        workloads = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
        finished = [
            w
            for w in workloads["items"]
            if any(
                c["type"] == "Finished" and c["status"] == "True" for c in w["status"]["conditions"]
            )
        ]
        assert len(finished) == 3

    port = hub_process["metrics_port"]
    deadline = time.monotonic() + 10
    admitted = 0.0
    while time.monotonic() < deadline and admitted < 3:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        admitted = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("kueue_admitted_workloads_total{")
            and f'cluster_queue="{cq}"' in line
        )
        time.sleep(0.3)
    assert admitted == 3, f"kueue_admitted_workloads_total for {cq}: {admitted}"
