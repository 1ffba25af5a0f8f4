"""`fleetq dev demo` (what `make demo` runs): a local GPU fleet, shown working, then removed.

For now the demo proves the ground the product stands on: three real control planes come
up offline, every cluster's nodes and GPUs are listed, and a GPU Job on a worker really runs
(scheduled by kube-scheduler onto kwok GPU nodes) to completion. Later work grows it into the
full MultiKueue showcase (hub, agents, jobs spreading over workers).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.fleet import Fleet
from devfleet.fleet_spec import load_fleet_spec
from devfleet.sample_jobs import JobOutcome, gpu_job, run_job

Say = Callable[[str], None]


def node_table(fleet: RunningFleet) -> Table:
    """One row per node: cluster, node, pool, CPU, memory, GPUs."""
    from kubernetes import client

    table = Table(title="fleet nodes (kwok fake nodes, real scheduler)")
    for column in ("cluster", "node", "pool", "cpu", "memory", "nvidia.com/gpu"):
        table.add_column(column)
    for member in fleet.all:
        with member.api_client() as api_client:
            nodes = client.CoreV1Api(api_client).list_node().items
        for node in sorted(nodes, key=lambda n: n.metadata.name):
            allocatable = node.status.allocatable or {}
            table.add_row(
                member.name,
                node.metadata.name,
                (node.metadata.labels or {}).get("fleetq.dev/node-pool", "-"),
                allocatable.get("cpu", "-"),
                allocatable.get("memory", "-"),
                allocatable.get("nvidia.com/gpu", "0"),
            )
    return table


def run_demo(*, keep: bool, say: Say) -> int:
    console = Console()
    fleet_handle = Fleet("demo")
    started = time.monotonic()
    fleet = fleet_handle.up(load_fleet_spec().with_worker_count(2), lite=False, progress=say)
    try:
        console.print(node_table(fleet))
        worker = fleet.cluster("worker-1")
        namespace = f"demo-{uuid.uuid4().hex[:6]}"
        _create_namespace(worker, namespace)
        say(f"submitting a 2-pod GPU job (4 GPUs per pod, runs 5s) to worker-1/{namespace}")
        outcome = run_job(
            worker,
            namespace,
            gpu_job(
                "train-llm",
                gpus_per_pod=4,
                pods=2,
                run_seconds=5,
                node_selector={"fleetq.dev/node-pool": "gpu"},
            ),
            progress=say,
        )
        _print_outcome(console, worker.name, outcome)
        say(f"demo done in {time.monotonic() - started:.0f}s")
    finally:
        if keep:
            say(
                f"KEEP=1: fleet left running; KUBECONFIG={fleet.manager.kubeconfig}; "
                "stop it with `fleetq dev down --name demo`"
            )
        else:
            say("tearing the fleet down")
            fleet_handle.down(progress=say)
    return 0


def _create_namespace(member: ClusterAccess, name: str) -> None:
    from kubernetes import client

    with member.api_client() as api_client:
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": name}})


def _print_outcome(console: Console, cluster: str, outcome: JobOutcome) -> None:
    table = Table(title="job outcome")
    for column in ("cluster", "job", "pods succeeded", "nodes", "wall time"):
        table.add_column(column)
    table.add_row(
        cluster,
        outcome.name,
        str(outcome.succeeded),
        ", ".join(outcome.nodes),
        f"{outcome.seconds:.1f}s",
    )
    console.print(table)
