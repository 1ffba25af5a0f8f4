"""The full fleet really runs batch Jobs: real scheduler, kwok GPU nodes, kwok run-time stages."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

from devfleet.cluster_access import RunningFleet
from devfleet.sample_jobs import gpu_job, run_job

NamespaceFactory = Callable[..., str]


def test_gpu_job_on_worker_1_is_scheduled_on_gpu_nodes_and_completes(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory
) -> None:
    worker = full_fleet.cluster("worker-1")
    namespace = namespace_factory("gpu", clusters=(worker,))
    outcome = run_job(worker, namespace, gpu_job("train", gpus_per_pod=4, pods=3, run_seconds=2))
    assert outcome.succeeded == 3
    assert outcome.nodes and all(node.startswith("worker-1-gpu-") for node in outcome.nodes)
    # Each pod ran at least the 2 s it asked for before the Job could complete.
    assert outcome.seconds >= 2


def test_cpu_job_follows_its_node_selector_to_cpu_nodes(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory
) -> None:
    worker = full_fleet.cluster("worker-2")
    namespace = namespace_factory("cpu", clusters=(worker,))
    job = gpu_job(
        "etl", gpus_per_pod=0, pods=4, run_seconds=1, node_selector={"fleetq.dev/node-pool": "cpu"}
    )
    outcome = run_job(worker, namespace, job)
    assert outcome.succeeded == 4
    assert all(node.startswith("worker-2-cpu-") for node in outcome.nodes)


def test_a_pod_asking_for_more_gpus_than_any_node_has_stays_pending(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory
) -> None:
    worker = full_fleet.cluster("worker-2")
    namespace = namespace_factory("big", clusters=(worker,))
    with worker.api_client() as api_client:
        client.BatchV1Api(api_client).create_namespaced_job(
            namespace, gpu_job("too-big", gpus_per_pod=9, pods=1, run_seconds=1)
        )
        core = client.CoreV1Api(api_client)
        deadline = time.monotonic() + 60
        reason = None
        while time.monotonic() < deadline and reason is None:
            for pod in core.list_namespaced_pod(namespace).items:
                for condition in pod.status.conditions or []:
                    if condition.type == "PodScheduled" and condition.status == "False":
                        reason = (condition.reason, condition.message)
            time.sleep(0.5)
    assert reason is not None, "the scheduler never reported the pod unschedulable"
    assert reason[0] == "Unschedulable"
    assert "nvidia.com/gpu" in reason[1]


def test_every_worker_node_is_ready_with_its_gpus(full_fleet: RunningFleet) -> None:
    # gpu and cpu pools, plus the tainted tas pools (4 and 3 GPU nodes in racks).
    expected = {"worker-1": (8, 64), "worker-2": (9, 40)}
    for name, (node_count, gpu_count) in expected.items():
        with full_fleet.cluster(name).api_client() as api_client:
            nodes = client.CoreV1Api(api_client).list_node().items
        ready = [
            n
            for n in nodes
            if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
        ]
        assert len(ready) == node_count, name
        gpus = sum(int((n.status.allocatable or {}).get("nvidia.com/gpu", "0")) for n in nodes)
        assert gpus == gpu_count, name
