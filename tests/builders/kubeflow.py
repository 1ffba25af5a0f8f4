"""kubeflow.org jobs as tests submit them: the training operator's v1 family and MPIJob.

Every kind is a map of replica types to ReplicaSpecs (`replicas`, pod `template`) with a
`runPolicy`; a test adds replica types with `replica(type, replicas, PodTemplate(...))`.
The operators' webhooks want each template's first container named after the framework
(`pytorch`, `tensorflow`, ...): `kwok_kubeflow_job` names it so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Self

from tests.builders.base import (
    MULTIKUEUE_CONTROLLER,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    ObjectBuilder,
)
from tests.builders.job import GPU
from tests.builders.pod import PodTemplate, template_of


@dataclass(frozen=True, slots=True)
class KubeflowKind:
    """What a test needs to know about one kind."""

    kind: str
    api_version: str
    replica_specs_field: str
    container: str
    """The container name the operator's validation requires."""
    leader: str | None
    """The one-pod CPU replica type of `kwok_kubeflow_job` (None: workers only)."""
    workers: str = "Worker"


PYTORCH: Final = KubeflowKind(
    "PyTorchJob", "kubeflow.org/v1", "pytorchReplicaSpecs", "pytorch", "Master"
)
TENSORFLOW: Final = KubeflowKind(
    "TFJob", "kubeflow.org/v1", "tfReplicaSpecs", "tensorflow", "Chief"
)
XGBOOST: Final = KubeflowKind(
    "XGBoostJob", "kubeflow.org/v1", "xgbReplicaSpecs", "xgboost", "Master"
)
PADDLE: Final = KubeflowKind(
    "PaddleJob", "kubeflow.org/v1", "paddleReplicaSpecs", "paddle", "Master"
)
JAX: Final = KubeflowKind("JAXJob", "kubeflow.org/v1", "jaxReplicaSpecs", "jax", None)
MPI: Final = KubeflowKind("MPIJob", "kubeflow.org/v2beta1", "mpiReplicaSpecs", "mpi", "Launcher")
KUBEFLOW_V1_KINDS: Final = (PYTORCH, TENSORFLOW, XGBOOST, PADDLE, JAX)
KINDS: Final = {kind.kind: kind for kind in (*KUBEFLOW_V1_KINDS, MPI)}


class KubeflowJob(ObjectBuilder):
    """A job of `kind` with no replica types until a test adds them."""

    # ObjectBuilder wants class-level defaults; __init__ writes the chosen kind's.
    api_version = PYTORCH.api_version
    kind = PYTORCH.kind

    def __init__(self, kind: KubeflowKind, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["apiVersion"], self._obj["kind"] = kind.api_version, kind.kind
        self._obj["spec"] = {kind.replica_specs_field: {}, "runPolicy": {}}

    @property
    def spec_kind(self) -> KubeflowKind:
        return KINDS[self._obj["kind"]]

    def replica(
        self, replica_type: str, replicas: int, template: PodTemplate | dict[str, object]
    ) -> Self:
        specs = self._obj["spec"][self.spec_kind.replica_specs_field]
        specs[replica_type] = {
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": template_of(template),
        }
        return self

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

    def run_policy(self, **fields: object) -> Self:
        self._obj["spec"]["runPolicy"].update(fields)
        return self

    def suspend(self, suspended: bool = True) -> Self:
        return self.run_policy(suspend=suspended)

    def managed_by(self, controller: str = MULTIKUEUE_CONTROLLER) -> Self:
        return self.run_policy(managedBy=controller)


def kwok_template(container: str, *, gpus: int, run_seconds: float) -> PodTemplate:
    """A pod of 1 CPU and 1Gi (and `gpus` GPUs as a limit) running `run_seconds` on kwok."""
    template = PodTemplate(container).requests({"cpu": "1", "memory": "1Gi"}).kwok_run(run_seconds)
    if gpus:
        template.limit(GPU, str(gpus))
    return template


def kwok_kubeflow_job(
    kind: KubeflowKind, name: str, *, workers: int, gpus_per_worker: int, run_seconds: float
) -> KubeflowJob:
    """The shape of a distributed training job: one CPU leader pod (the kind's Master,
    Chief or Launcher; none for JAXJob) and `workers` GPU Worker pods, all running
    `run_seconds` on kwok nodes (devfleet.sample_jobs.gpu_kubeflow_job builds the same)."""
    job = KubeflowJob(kind, name)
    if kind is MPI:
        # MPI workers run until the launcher ends (kwok never finishes them); the operator
        # deletes them then with this policy (its default, None, leaves them running).
        job.run_policy(cleanPodPolicy="Running")
    if kind.leader is not None:
        job.replica(kind.leader, 1, kwok_template(kind.container, gpus=0, run_seconds=run_seconds))
    return job.replica(
        kind.workers,
        workers,
        kwok_template(kind.container, gpus=gpus_per_worker, run_seconds=run_seconds),
    )
