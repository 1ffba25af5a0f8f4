"""Batch Jobs that run on the fake nodes of a local fleet, and a way to watch them finish.

The pods' "run time" is the kwok stage annotation: a pod stays Running that long, then
succeeds. Everything else is an ordinary batch/v1 Job, scheduled by the real scheduler.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devfleet.cluster_access import ClusterAccess
from devfleet.kwok_stages import run_for


def gpu_job(
    name: str,
    *,
    gpus_per_pod: int,
    pods: int,
    run_seconds: float,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Job of `pods` pods, each asking for `gpus_per_pod` nvidia.com/gpu (0: CPU only)."""
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus_per_pod:
        resources["limits"] = {"nvidia.com/gpu": str(gpus_per_pod)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": run_for(run_seconds)},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": dict(node_selector or {}),
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/train:latest",
                            "resources": resources,
                        }
                    ],
                },
            },
        },
    }


@dataclass(frozen=True)
class JobOutcome:
    """Where a Job's pods ran and how long the whole Job took."""

    name: str
    succeeded: int
    nodes: tuple[str, ...]
    seconds: float


def run_job(
    member: ClusterAccess,
    namespace: str,
    job: dict[str, Any],
    *,
    timeout: float = 120,
    progress: Callable[[str], None] | None = None,
) -> JobOutcome:
    """Create the Job and wait for it to complete; raise with its state if it does not."""
    from kubernetes import client

    name = job["metadata"]["name"]
    started = time.monotonic()
    with member.api_client() as api_client:
        batch = client.BatchV1Api(api_client)
        core = client.CoreV1Api(api_client)
        batch.create_namespaced_job(namespace, job)
        deadline = started + timeout
        last_phases = ""
        while time.monotonic() < deadline:
            status = batch.read_namespaced_job_status(name, namespace).status
            pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
            phases = ", ".join(sorted(f"{p.metadata.name[-5:]}:{p.status.phase}" for p in pods))
            if progress and phases != last_phases:
                progress(
                    f"  [{time.monotonic() - started:5.1f}s] job {name}: {phases or 'no pods yet'}"
                )
                last_phases = phases
            if _condition(status, "Complete"):
                nodes = tuple(sorted({p.spec.node_name for p in pods if p.spec.node_name}))
                return JobOutcome(name, status.succeeded or 0, nodes, time.monotonic() - started)
            if _condition(status, "Failed"):
                raise RuntimeError(f"job {namespace}/{name} failed: {status}")
            time.sleep(0.5)
    raise TimeoutError(f"job {namespace}/{name} not complete after {timeout:.0f}s: {last_phases}")


def _condition(status: Any, kind: str) -> bool:
    return any(c.type == kind and c.status == "True" for c in (status.conditions or []))


def gpu_jobset(
    name: str,
    *,
    workers: int,
    gpus_per_worker: int,
    run_seconds: float,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A JobSet of a CPU `driver` (one pod) and `workers` GPU pods (one child Job each),
    each running `run_seconds` on kwok nodes: the shape of a distributed training job."""

    def replicated(rj_name: str, replicas: int, gpus: int) -> dict[str, Any]:
        job = gpu_job(
            rj_name, gpus_per_pod=gpus, pods=1, run_seconds=run_seconds, node_selector=node_selector
        )
        return {"name": rj_name, "replicas": replicas, "template": {"spec": job["spec"]}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                replicated("driver", 1, 0),
                replicated("workers", workers, gpus_per_worker),
            ],
        },
    }


def gpu_rayjob(
    name: str,
    *,
    workers: int,
    gpus_per_worker: int,
    run_seconds: float,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A RayJob: a CPU head, `workers` GPU workers (group `workers`) and KubeRay's submitter,
    which "runs" `run_seconds` on kwok nodes (the job ends when its submitter does; kwok
    keeps head and workers running until KubeRay deletes the cluster)."""

    def template(
        container: str, requests: dict[str, str], limits: dict[str, str] | None = None
    ) -> dict[str, Any]:
        resources: dict[str, Any] = {"requests": requests}
        if limits:
            resources["limits"] = limits
        return {
            "spec": {
                "nodeSelector": dict(node_selector or {}),
                "containers": [
                    {
                        "name": container,
                        "image": "registry.invalid/ray:2.46.0",
                        "resources": resources,
                    }
                ],
            }
        }

    worker_limits = {"nvidia.com/gpu": str(gpus_per_worker)} if gpus_per_worker else None
    submitter = template("ray-job-submitter", {"cpu": "500m", "memory": "200Mi"})
    submitter["spec"]["restartPolicy"] = "Never"
    submitter["metadata"] = {"annotations": run_for(run_seconds)}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": "python /home/ray/train.py",
            "shutdownAfterJobFinishes": True,
            "submitterPodTemplate": submitter,
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": template("ray-head", {"cpu": "1", "memory": "1Gi"}),
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": workers,
                        "minReplicas": workers,
                        "maxReplicas": workers,
                        "rayStartParams": {},
                        "template": template(
                            "ray-worker", {"cpu": "1", "memory": "1Gi"}, worker_limits
                        ),
                    }
                ],
            },
        },
    }


TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
KWOK_TRAINING_RUNTIME = "kwok-torch-distributed"
"""The ClusterTrainingRuntime every full fleet cluster gets (devfleet/trainer_controller.py)."""
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def kwok_training_runtime(
    name: str = KWOK_TRAINING_RUNTIME,
    *,
    run_seconds: float = 5,
    kind: str = "ClusterTrainingRuntime",
) -> dict[str, Any]:
    """A torch-distributed (Cluster)TrainingRuntime whose `node` pods (1 CPU, 1Gi) run
    `run_seconds` on kwok nodes; a TrainJob sets how many nodes and their GPUs."""
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {TRAINER_ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "backoffLimit": 0,
                                    "template": {
                                        "metadata": {"annotations": run_for(run_seconds)},
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": "registry.invalid/torch:latest",
                                                    "resources": {
                                                        "requests": {"cpu": "1", "memory": "1Gi"}
                                                    },
                                                }
                                            ],
                                        },
                                    },
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def gpu_trainjob(
    name: str,
    *,
    nodes: int,
    gpus_per_node: int,
    runtime: str = KWOK_TRAINING_RUNTIME,
    runtime_kind: str = "ClusterTrainingRuntime",
) -> dict[str, Any]:
    """A TrainJob of `nodes` training nodes, each 1 CPU, 1Gi and `gpus_per_node` GPUs."""
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus_per_node:
        resources["limits"] = {"nvidia.com/gpu": str(gpus_per_node)}
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {
                "name": runtime,
                "apiGroup": "trainer.kubeflow.org",
                "kind": runtime_kind,
            },
            "trainer": {"numNodes": nodes, "resourcesPerNode": resources},
        },
    }


def gpu_pytorchjob(
    name: str,
    *,
    workers: int,
    gpus_per_worker: int,
    run_seconds: float,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A kubeflow.org/v1 PyTorchJob of one CPU `Master` and `workers` GPU `Worker` pods,
    each running `run_seconds` on kwok nodes (the training operator wants the container
    named `pytorch`): the shape of the demo's distributed training job."""

    def replica(replicas: int, gpus: int) -> dict[str, Any]:
        pod = gpu_job("pod", gpus_per_pod=gpus, pods=1, run_seconds=run_seconds)
        template = pod["spec"]["template"]
        template["spec"]["nodeSelector"] = dict(node_selector or {})
        template["spec"]["containers"][0]["name"] = "pytorch"
        return {"replicas": replicas, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": {},
            "pytorchReplicaSpecs": {
                "Master": replica(1, 0),
                "Worker": replica(workers, gpus_per_worker),
            },
        },
    }
