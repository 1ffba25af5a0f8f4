"""`fleetq hub --webhook-url-host 127.0.0.1` on worker-1 of the full fleet, as a user meets it.

The hub runs outside the cluster, serves its admission webhooks on 127.0.0.1 and registers
URL-based webhook configurations itself. A user creates an ordinary, unsuspended Job that
names a LocalQueue: the mutating webhook suspends it at create time, the hub admits it,
its pods run on the GPU kwok nodes with the flavor's nodeSelector, and its quota comes
back when it completes. A Job naming an invalid queue is refused with the webhook's
message. A clean stop removes the configurations the hub created.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
import uuid
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
from devfleet.sample_jobs import gpu_job

NamespaceFactory = Callable[..., str]
REPO = Path(__file__).resolve().parents[2]
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
GPU = "nvidia.com/gpu"
POOL_LABEL = "fleetq.dev/node-pool"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MUTATING = "fleetq-mutating-webhook-configuration"
VALIDATING = "fleetq-validating-webhook-configuration"


def _configurations_present(worker: ClusterAccess) -> list[bool]:
    with worker.api_client() as api_client:
        api = client.AdmissionregistrationV1Api(api_client)
        present = []
        for read, name in (
            (api.read_mutating_webhook_configuration, MUTATING),
            (api.read_validating_webhook_configuration, VALIDATING),
        ):
            try:
                read(name)
                present.append(True)
            except client.ApiException as error:
                assert error.status == 404
                present.append(False)
        return present


def _delete_configurations(worker: ClusterAccess) -> None:
    with worker.api_client() as api_client:
        api = client.AdmissionregistrationV1Api(api_client)
        with contextlib.suppress(client.ApiException):
            api.delete_mutating_webhook_configuration(MUTATING)
        with contextlib.suppress(client.ApiException):
            api.delete_validating_webhook_configuration(VALIDATING)


@pytest.fixture
def webhook_hub(full_fleet: RunningFleet, tmp_path: Path) -> Iterator[dict[str, Any]]:
    worker = full_fleet.cluster("worker-1")
    install_crds(worker)
    assert _configurations_present(worker) == [False, False], "left over from another run"
    hub_namespace = f"fleetq-e2e-{uuid.uuid4().hex[:8]}"  # the hub creates it for its Secret
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "namespace": hub_namespace,
                "leaderElection": {"leaderElect": False},
                "clientConnection": {"qps": 50, "burst": 100},
                "webhook": {"certDir": str(tmp_path / "certs")},
            }
        )
    )
    health = allocate_ports(1)[0]
    log_path = tmp_path / "hub.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "cli.main", "hub"),
                *("--config", str(config), "--kubeconfig", str(worker.kubeconfig)),
                *("--health-port", str(health), "--metrics-port", str(allocate_ports(1)[0])),
                *("--webhook-url-host", "127.0.0.1", "--webhook-port", str(allocate_ports(1)[0])),
            ],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    hub = {"worker": worker, "process": process, "log": log_path}
    try:
        until(lambda: _ready(health, process, log_path), "the hub ready (webhooks registered)")
        yield hub
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.returncode != 0:
            # Not a clean stop: nothing removed the fail-closed webhooks, so do it here.
            _delete_configurations(worker)
        with worker.api_client() as api_client, contextlib.suppress(client.ApiException):
            client.CoreV1Api(api_client).delete_namespace(hub_namespace)


def _ready(port: int, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"the hub exited with {process.returncode}:\n{log.read_text()}")
    with (
        contextlib.suppress(OSError),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply,
    ):
        return reply.status == 200
    return False


def _queue(worker: ClusterAccess, namespace: str) -> tuple[str, str]:
    """A GPU flavor and a 16-GPU ClusterQueue for `namespace`, LocalQueue `team`."""
    suffix = namespace.rpartition("-")[2]
    flavor, cq = f"gpu-{suffix}", f"gpus-{suffix}"
    quota = [
        {"name": "cpu", "nominalQuota": "64"},
        {"name": "memory", "nominalQuota": "256Gi"},
        {"name": GPU, "nominalQuota": "16"},
    ]
    objects = [
        ("resourceflavors", "ResourceFlavor", flavor, {"nodeLabels": {POOL_LABEL: "gpu"}}, ""),
        (
            "clusterqueues",
            "ClusterQueue",
            cq,
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", GPU],
                        "flavors": [{"name": flavor, "resources": quota}],
                    }
                ],
            },
            "",
        ),
        ("localqueues", "LocalQueue", "team", {"clusterQueue": cq}, namespace),
    ]
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        for plural, kind, name, spec, ns in objects:
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": kind,
                "metadata": {"name": name},
                "spec": spec,
            }
            if ns:
                custom.create_namespaced_custom_object(GROUP, VERSION, ns, plural, body)
            else:
                custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
    return flavor, cq


def _remove_queue(worker: ClusterAccess, flavor: str, cq: str) -> None:
    """Deleted while the hub runs, so its finalizers come off as in real use."""
    with worker.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        for plural, name in (("clusterqueues", cq), ("resourceflavors", flavor)):
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)


def _cq_usage(worker: ClusterAccess, cq: str) -> dict[str, str]:
    with worker.api_client() as api_client:
        found = client.CustomObjectsApi(api_client).get_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", cq
        )
    status = found.get("status") or {}
    usage = {"reserving": str(status.get("reservingWorkloads", 0))}
    for flavor in status.get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            usage[resource["name"]] = resource.get("total", "0")
    return usage


def test_a_plain_job_is_suspended_by_the_webhook_admitted_run_on_gpus_and_releases_quota(
    webhook_hub: dict[str, Any], namespace_factory: NamespaceFactory
) -> None:
    worker: ClusterAccess = webhook_hub["worker"]
    assert _configurations_present(worker) == [True, True]
    namespace = namespace_factory("hubwh", clusters=(worker,))
    flavor, cq = _queue(worker, namespace)
    try:
        with worker.api_client() as api_client:
            batch = client.BatchV1Api(api_client)
            job = gpu_job("train", gpus_per_pod=4, pods=2, run_seconds=3)
            job["metadata"]["labels"] = {QUEUE_LABEL: "team"}
            assert "suspend" not in job["spec"], "the user's Job is an ordinary one"

            created = batch.create_namespaced_job(namespace, job)
            assert created.spec.suspend is True, "suspended by the mutating webhook"

            def in_use() -> dict[str, str] | None:
                usage = _cq_usage(worker, cq)
                return usage if usage.get(GPU) == "8" else None

            assert until(in_use, "8 GPUs in use")["reserving"] == "1"

            def complete() -> Any:
                found = batch.read_namespaced_job("train", namespace)
                conditions = found.status.conditions or []
                done = any(c.type == "Complete" and c.status == "True" for c in conditions)
                return found if done else None

            finished = until(complete, "the Job complete", timeout=120)
            assert finished.status.succeeded == 2
            pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
            assert len(pods) == 2
            assert all(pod.spec.node_selector == {POOL_LABEL: "gpu"} for pod in pods)
            assert all((pod.spec.node_name or "").startswith("worker-1-gpu-") for pod in pods)

            def released() -> dict[str, str] | None:
                usage = _cq_usage(worker, cq)
                return usage if usage.get(GPU) == "0" and usage["reserving"] == "0" else None

            until(released, "quota released")

            bad = gpu_job("bad", gpus_per_pod=1, pods=1, run_seconds=1)
            bad["metadata"]["labels"] = {QUEUE_LABEL: "Team_A"}
            with pytest.raises(client.ApiException) as raised:
                batch.create_namespaced_job(namespace, bad)
            assert raised.value.status == 403
            message = json.loads(raised.value.body)["message"]
            assert 'admission webhook "vjob.fleetq.dev" denied the request' in message
            assert f"metadata.labels[{QUEUE_LABEL}]: Invalid value" in message
    finally:
        _remove_queue(worker, flavor, cq)

    webhook_hub["process"].terminate()
    assert webhook_hub["process"].wait(timeout=15) == 0
    assert _configurations_present(worker) == [False, False], "removed on a clean stop"
