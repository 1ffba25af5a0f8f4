"""The objects the dashboard benchmark puts on its two lite clusters.

On the manager: one ResourceFlavor, a ClusterQueue with quota for `admitted` of the
Workloads (the rest stay pending, so the engine holds queue positions for them), a
LocalQueue, `workers` MultiKueueClusters with their kubeconfig Secrets, and the viewers:
ServiceAccounts in the bench namespace whose group may read what every view shows
(nothing more). On the worker: one WorkerCapacity report per MultiKueueCluster, named
after it, so each of the hub's connections picks its own report (`pick_report`). The
Workloads are created directly, as upstream's perf runner creates them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hub.dashboard.access import SHOWN_RESOURCES

KUEUE_API = "kueue.x-k8s.io/v1beta2"
FLEETQ_API = "fleetq.dev/v1alpha1"
Manifest = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DashboardFleet:
    """Names and sizes of one benchmark setup."""

    workloads: int = 10_000
    admitted: int = 4_000
    workers: int = 20
    namespace: str = "dash"
    manager_namespace: str = "kueue-system"
    flavor: str = "default-flavor"
    cluster_queue: str = "dash-cq"
    local_queue: str = "user-queue"
    nodes_per_worker: int = 50

    def worker_name(self, index: int) -> str:
        return f"worker-{index + 1:02d}"

    @property
    def worker_names(self) -> list[str]:
        return [self.worker_name(i) for i in range(self.workers)]

    def viewer(self, index: int) -> str:
        return f"viewer-{index + 1}"

    # -- manager ----------------------------------------------------------------------
    def manager_manifests(self, worker_kubeconfig: str, viewers: int) -> list[Manifest]:
        """Queues, clusters with their Secrets (all reach the one worker apiserver), viewers."""
        documents: list[Manifest] = [
            _namespace(self.namespace),
            _namespace(self.manager_namespace),
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": self.flavor}},
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": self.cluster_queue},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": self.flavor,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": str(self.admitted)}
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": self.local_queue, "namespace": self.namespace},
                "spec": {"clusterQueue": self.cluster_queue},
            },
        ]
        for name in self.worker_names:
            secret = f"{name}-kubeconfig"
            documents.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": self.manager_namespace},
                    "stringData": {"kubeconfig": worker_kubeconfig},
                }
            )
            documents.append(
                {
                    "apiVersion": KUEUE_API,
                    "kind": "MultiKueueCluster",
                    "metadata": {"name": name},
                    "spec": {
                        "clusterSource": {
                            "kubeConfig": {"locationType": "Secret", "location": secret}
                        }
                    },
                }
            )
        return documents + self.viewer_manifests(viewers)

    def viewer_manifests(self, viewers: int) -> list[Manifest]:
        """`viewers` ServiceAccounts (one per open stream: the hub allows a user 4) whose
        namespace group may get and list the Kueue objects the views show."""
        group = f"system:serviceaccounts:{self.namespace}"
        documents: list[Manifest] = [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": self.viewer(i), "namespace": self.namespace},
            }
            for i in range(viewers)
        ]
        documents.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "dash-bench-viewer"},
                "rules": [
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "resources": list(SHOWN_RESOURCES),
                        "verbs": ["get", "list"],
                    }
                ],
            }
        )
        documents.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "dash-bench-viewer"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "dash-bench-viewer",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
                ],
            }
        )
        return documents

    def workload(self, name: str, index: int) -> Manifest:
        """A one-pod Workload asking for one CPU, priorities 0-3 in turn."""
        return {
            "apiVersion": KUEUE_API,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "queueName": self.local_queue,
                "priority": index % 4,
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "main",
                                        "image": "bench.invalid/job:latest",
                                        "resources": {"requests": {"cpu": "1"}},
                                    }
                                ],
                            }
                        },
                    }
                ],
            },
        }

    # -- worker -----------------------------------------------------------------------
    def report(self, name: str) -> Manifest:
        """The WorkerCapacity object (its status is written with `report_status`)."""
        return {
            "apiVersion": FLEETQ_API,
            "kind": "WorkerCapacity",
            "metadata": {"name": name},
            "spec": {"clusterName": name},
        }

    def report_status(self, requested_millicpu: int) -> Manifest:
        """A worker's free capacity: `nodes_per_worker` 64-CPU nodes, some CPU requested."""
        allocatable_milli = 64_000 * self.nodes_per_worker
        free_milli = max(0, allocatable_milli - requested_millicpu)
        memory = f"{256 * self.nodes_per_worker}Gi"
        return {
            "status": {
                "observedTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "flavors": [
                    {
                        "name": self.flavor,
                        "nodeCount": self.nodes_per_worker,
                        "allocatable": {"cpu": f"{allocatable_milli}m", "memory": memory},
                        "requested": {"cpu": f"{requested_millicpu}m", "memory": "0"},
                        "free": {"cpu": f"{free_milli}m", "memory": memory},
                        "largestFreeBlocks": [{"cpu": "64", "memory": "256Gi"}],
                    }
                ],
            }
        }


def _namespace(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
