"""Worker clusters shaped like the default dev fleet, reported on by the real agent code.

worker-1: 4 nodes x 8 H100 (flavor h100); worker-2: 2 nodes x 8 A100 (flavor a100) and
4 CPU nodes (flavor cpu). Each worker has a ClusterQueue team-a; the LocalQueue team-a
points to it. Tests occupy nodes with running pods and reserve quota, then read the
reports through `snapshot_from_report`, exactly as the hub will.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.adapters.kueue_manifests import cluster_queue_from_manifest
from core.api.codec import decode
from core.api.resource_flavor import ResourceFlavor
from core.api.worker_capacity import WorkerCapacity
from core.engine.dispatch.capacity_snapshot import CapacitySnapshot, snapshot_from_report
from core.engine.dispatch.placement import WorkerCandidate
from core.engine.model import ClusterQueue, ClusterQueueStatus, FlavorResourceUsage
from core.engine.model import ResourceFlavor as EngineFlavor
from core.engine.quantity import to_base_units
from devfleet.fleet_spec import load_fleet_spec, node_manifests
from worker_agent.capacity.node_pool import engine_flavor
from worker_agent.capacity.queue_figures import ClusterQueueFigures
from worker_agent.capacity.report import build_report

NOW = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
POOL = "fleetq.dev/node-pool"


def ready(node: dict[str, Any]) -> dict[str, Any]:
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return node


def api_flavor(name: str, labels: Mapping[str, str], **spec: Any) -> ResourceFlavor:
    return decode(
        ResourceFlavor, {"metadata": {"name": name}, "spec": {"nodeLabels": dict(labels), **spec}}
    )


def cluster_queue(name: str, flavors: list[tuple[str, dict[str, str]]]) -> ClusterQueue:
    """One resource group over cpu, memory and GPUs; `flavors` in preference order."""
    resources = ["cpu", "memory", "nvidia.com/gpu"]
    return cluster_queue_from_manifest(
        {
            "metadata": {"name": name},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": resources,
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": r, "nominalQuota": quota.get(r, "0")}
                                    for r in resources
                                ],
                            }
                            for flavor, quota in flavors
                        ],
                    }
                ]
            },
        }
    )


@dataclass
class WorkerCluster:
    """A worker's objects as its agent would see them; `report()` runs the real builder."""

    name: str
    nodes: list[dict[str, Any]]
    flavors: list[ResourceFlavor]
    queue: ClusterQueue
    pods: list[dict[str, Any]] = field(default_factory=list)
    # (flavor, resource) -> reserved amount in engine units
    reserved: dict[tuple[str, str], int] = field(default_factory=dict)
    pending: int = 0

    def occupy(self, node: str, **requests: str) -> None:
        """Bind a running pod requesting `requests` (resource names with _ for / and .)."""
        names = {"gpu": "nvidia.com/gpu"}
        self.pods.append(
            {
                "metadata": {"name": f"p{len(self.pods)}", "namespace": "ns"},
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {names.get(k, k): v for k, v in requests.items()}
                            },
                        }
                    ],
                },
                "status": {"phase": "Running"},
            }
        )

    def taint_gpu_nodes(self, taint: dict[str, str]) -> None:
        """Taint the GPU nodes and declare the taint on the GPU flavor, as GPU pools do."""
        for node in self.nodes:
            if node["metadata"]["labels"][POOL] == "gpu":
                node["spec"]["taints"] = [taint]
        self.flavors = [
            api_flavor(f.metadata.name, f.spec.node_labels, nodeTaints=[taint])
            if f.spec.node_labels.get(POOL) == "gpu"
            else f
            for f in self.flavors
        ]

    def reserve(self, flavor: str, **amounts: str) -> None:
        names = {"gpu": "nvidia.com/gpu"}
        for key, qty in amounts.items():
            resource = names.get(key, key)
            self.reserved[(flavor, resource)] = to_base_units(resource, qty)

    def status(self) -> ClusterQueueStatus:
        usage = tuple(
            FlavorResourceUsage(flavor=f, resource=r, total=v, borrowed=0)
            for (f, r), v in sorted(self.reserved.items())
        )
        return ClusterQueueStatus(
            pending_workloads=self.pending,
            reserving_workloads=0,
            admitted_workloads=0,
            flavors_reservation=usage,
            flavors_usage=usage,
            weighted_share=0,
            conditions=(),
        )

    def report(self, observed: datetime = NOW) -> WorkerCapacity:
        return build_report(
            cluster_name=self.name,
            nodes=self.nodes,
            pods=self.pods,
            flavors=self.flavors,
            cluster_queues=[ClusterQueueFigures(spec=self.queue, status=self.status())],
            now=observed,
        )

    def snapshot(self, age: float = 0.0) -> CapacitySnapshot:
        return snapshot_from_report(self.report(NOW - timedelta(seconds=age)))

    def flavor_specs(self) -> dict[str, EngineFlavor]:
        return {f.metadata.name: engine_flavor(f) for f in self.flavors}

    def candidate(self, *, age: float = 0.0, with_specs: bool = True) -> WorkerCandidate:
        return WorkerCandidate(
            name=self.name,
            snapshot=self.snapshot(age),
            cluster_queue=self.queue.name,
            flavor_specs=self.flavor_specs() if with_specs else None,
        )


def _dev_nodes(worker: str) -> list[dict[str, Any]]:
    spec = load_fleet_spec()
    cluster = next(c for c in spec.workers if c.name == worker)
    return [ready(node) for node in node_manifests(cluster)]


@pytest.fixture
def fleet() -> dict[str, WorkerCluster]:
    """The dev fleet's two workers, idle, each with ClusterQueue team-a."""
    worker1 = WorkerCluster(
        name="worker-1",
        nodes=_dev_nodes("worker-1"),
        flavors=[api_flavor("h100", {POOL: "gpu"})],
        queue=cluster_queue(
            "team-a", [("h100", {"cpu": "256", "memory": "2Ti", "nvidia.com/gpu": "32"})]
        ),
    )
    worker2 = WorkerCluster(
        name="worker-2",
        nodes=_dev_nodes("worker-2"),
        flavors=[api_flavor("a100", {POOL: "gpu"}), api_flavor("cpu", {POOL: "cpu"})],
        queue=cluster_queue(
            "team-a",
            [
                ("a100", {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "16"}),
                ("cpu", {"cpu": "128", "memory": "512Gi"}),
            ],
        ),
    )
    return {"worker-1": worker1, "worker-2": worker2}


@pytest.fixture
def now() -> float:
    """The hub's clock when it decides, as seconds since the epoch."""
    return NOW.timestamp()
