"""The queueing objects one MultiKueue setup needs, on the manager and on every worker.

Both managers get the same shape, so the benchmark and the interop tests compare like with
like: on the manager a ResourceFlavor, a ClusterQueue guarded by a MultiKueue
AdmissionCheck, a LocalQueue, the MultiKueueConfig listing the workers, and per worker a
MultiKueueCluster reading its kubeconfig from a Secret in the manager's namespace; on each
worker the twin namespace, LocalQueue (same name) and a ClusterQueue of its own. Names
carry a suffix so several setups can share a fleet. Objects are applied server-side with
kubectl, so repeating a setup changes nothing.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet.upstream_kueue import UpstreamKueueError, kubectl

KUEUE_API = "kueue.x-k8s.io/v1beta2"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
Manifest = dict[str, Any]


@dataclass(frozen=True, slots=True)
class QueueSetup:
    """Names of one setup; every cluster-scoped name ends in `suffix`."""

    suffix: str
    namespace: str
    workers: tuple[str, ...]
    manager_namespace: str = "kueue-system"
    local_queue: str = "user-queue"
    cpu_quota: str = "100k"
    memory_quota: str = "100Ti"

    @property
    def flavor(self) -> str:
        return f"default-{self.suffix}"

    @property
    def cluster_queue(self) -> str:
        return f"cq-{self.suffix}"

    @property
    def check(self) -> str:
        return f"mk-{self.suffix}"

    @property
    def config(self) -> str:
        return f"mkconf-{self.suffix}"

    def cluster_name(self, worker: str) -> str:
        return f"{worker}-{self.suffix}"

    def secret_name(self, worker: str) -> str:
        return f"{worker}-{self.suffix}-kubeconfig"

    # -- manifests ----------------------------------------------------------------------
    def _queues(self, *, checks: Sequence[str]) -> list[Manifest]:
        quota = [
            {"name": "cpu", "nominalQuota": self.cpu_quota},
            {"name": "memory", "nominalQuota": self.memory_quota},
        ]
        cq_spec: Manifest = {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": self.flavor, "resources": quota}],
                }
            ],
        }
        if checks:
            cq_spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": name} for name in checks]
            }
        return [
            _namespace(self.namespace),
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": self.flavor}},
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": self.cluster_queue},
                "spec": cq_spec,
            },
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": self.local_queue, "namespace": self.namespace},
                "spec": {"clusterQueue": self.cluster_queue},
            },
        ]

    def worker_manifests(self) -> list[Manifest]:
        """What each worker needs: the twin namespace and LocalQueue, a ClusterQueue."""
        return self._queues(checks=())

    def manager_manifests(self, kubeconfigs: dict[str, str]) -> list[Manifest]:
        """The manager's queues, check, config, clusters and kubeconfig Secrets.

        `kubeconfigs` maps each worker to the kubeconfig text the manager uses for it.
        """
        documents = [_namespace(self.manager_namespace)]
        for worker in self.workers:
            documents.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": self.secret_name(worker),
                        "namespace": self.manager_namespace,
                    },
                    "stringData": {"kubeconfig": kubeconfigs[worker]},
                }
            )
            documents.append(
                {
                    "apiVersion": KUEUE_API,
                    "kind": "MultiKueueCluster",
                    "metadata": {"name": self.cluster_name(worker)},
                    "spec": {
                        "clusterSource": {
                            "kubeConfig": {
                                "locationType": "Secret",
                                "location": self.secret_name(worker),
                            }
                        }
                    },
                }
            )
        documents.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "MultiKueueConfig",
                "metadata": {"name": self.config},
                "spec": {"clusters": [self.cluster_name(w) for w in self.workers]},
            }
        )
        documents.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "AdmissionCheck",
                "metadata": {"name": self.check},
                "spec": {
                    "controllerName": MULTIKUEUE_CONTROLLER,
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": self.config,
                    },
                },
            }
        )
        return documents + self._queues(checks=(self.check,))

    def cluster_scoped(self) -> list[tuple[str, str]]:
        """(resource, name) of the cluster-scoped objects, for clean-up."""
        names = [
            ("clusterqueues.kueue.x-k8s.io", self.cluster_queue),
            ("resourceflavors.kueue.x-k8s.io", self.flavor),
            ("admissionchecks.kueue.x-k8s.io", self.check),
            ("multikueueconfigs.kueue.x-k8s.io", self.config),
        ]
        names += [("multikueueclusters.kueue.x-k8s.io", self.cluster_name(w)) for w in self.workers]
        return names

    def job(
        self, name: str, *, cpu: str = "100m", annotations: dict[str, str] | None = None
    ) -> Manifest:
        """A Job for the manager: suspended and marked for MultiKueue, as the webhook would."""
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {QUEUE_LABEL: self.local_queue},
            },
            "spec": {
                "suspend": True,
                "managedBy": MANAGED_BY_MULTIKUEUE,
                "parallelism": 1,
                "completions": 1,
                "backoffLimit": 0,
                "template": {
                    "metadata": {"annotations": dict(annotations or {})},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "registry.invalid/bench:latest",
                                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                            }
                        ],
                    },
                },
            },
        }


def _namespace(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def apply_manifests(kubeconfig: Path, manifests: Sequence[Manifest]) -> None:
    """Server-side apply, in order (namespaces before what lives in them)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        yaml.safe_dump_all(list(manifests), file, sort_keys=False)
        file.flush()
        kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", file.name)


def remove_cluster_scoped(kubeconfig: Path, setup: QueueSetup) -> None:
    """Delete the setup's cluster-scoped objects, finalizers first (their controller may be
    gone, and nothing else would ever release them)."""
    for resource, name in setup.cluster_scoped():
        patch = '{"metadata":{"finalizers":null}}'
        with contextlib.suppress(UpstreamKueueError):
            kubectl(kubeconfig, "patch", resource, name, "--type=merge", "-p", patch)
        with contextlib.suppress(UpstreamKueueError):
            kubectl(kubeconfig, "delete", resource, name, "--ignore-not-found", "--wait=false")
