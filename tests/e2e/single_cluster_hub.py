"""`fleetq hub` as a real process managing worker-1 of the full fleet on its own (no
MultiKueue), and a 16-GPU queue there: the fixtures of the single-cluster e2e tests.

`hub_process` enables every job kind fleetq has (the fleet runs their operators on every
cluster); jobs are submitted suspended, as the hub runs without webhooks. `gpu_queue`
makes a ResourceFlavor over the GPU pool, a ClusterQueue with 16 GPUs open to a fresh
namespace and the LocalQueue `team` in it, and tears them down while the hub still runs.
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
from integrations.registry import REGISTRY
from tests.e2e.gpu_queue import gpu_queue_manifests

NamespaceFactory = Callable[..., str]
REPO = Path(__file__).resolve().parents[2]
GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"

__all__ = ["GROUP", "VERSION", "create_kueue_object", "gpu_queue", "hub_process"]


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
                # Every kind fleetq has: the fleet runs their operators on every cluster.
                "integrations": {"frameworks": list(REGISTRY.names)},
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


def create_kueue_object(
    api: client.CustomObjectsApi, plural: str, body: dict[str, Any], ns: str = ""
) -> None:
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
        create_kueue_object(custom, "resourceflavors", flavor_body)
        create_kueue_object(custom, "clusterqueues", cq_body)
        create_kueue_object(custom, "localqueues", lq_body, namespace)
    yield namespace, flavor, cq
    delete_kueue_cluster_objects(worker, [("clusterqueues", cq), ("resourceflavors", flavor)])


def delete_kueue_cluster_objects(member: ClusterAccess, objects: list[tuple[str, str]]) -> None:
    """Delete cluster-scoped Kueue objects (plural, name) and wait until each is gone: the
    hub drops its finalizers; one still held after 15 s has them cleared, so a test's
    teardown never leaves an object behind."""
    with member.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        for plural, name in objects:
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
