"""Kubeflow Trainer v2.0 TrainJobs and (Cluster)TrainingRuntimes, as tests submit them.

A runtime is a JobSet template whose replicated jobs reuse the Job builder for their
child template (`replicated_job(name, Job(...), ancestor=...)`), so its pods are built
exactly like a Job's; a TrainJob names a runtime and sets the trainer's node count and
resources. `kwok_training_runtime` / `kwok_trainjob` equal devfleet's samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from tests.builders.base import (
    MULTIKUEUE_CONTROLLER,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    ObjectBuilder,
)
from tests.builders.job import GPU, Job

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
OVERRIDE_INDEX_ANNOTATION = "kueue.x-k8s.io/override-idx"


class ClusterTrainingRuntime(ObjectBuilder):
    """A runtime with a torch policy of one node and no replicated jobs until added."""

    api_version = TRAINER_API_VERSION
    kind = "ClusterTrainingRuntime"

    def __init__(self, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {"spec": {"replicatedJobs": []}},
        }

    def replicated_job(
        self, name: str, job: Job, *, ancestor: str | None = None, replicas: int | None = None
    ) -> Self:
        entry: dict[str, Any] = {"name": name, "template": {"spec": job.obj()["spec"]}}
        if ancestor is not None:
            entry["template"] = {
                "metadata": {"labels": {ANCESTOR_LABEL: ancestor}},
                **entry["template"],
            }
        if replicas is not None:
            entry["replicas"] = replicas
        self._obj["spec"]["template"]["spec"]["replicatedJobs"].append(entry)
        return self

    def ml_policy(self, policy: Mapping[str, Any] | None) -> Self:
        if policy is None:
            self._obj["spec"].pop("mlPolicy", None)
        else:
            self._obj["spec"]["mlPolicy"] = dict(policy)
        return self


class TrainingRuntime(ClusterTrainingRuntime):
    """The namespaced runtime (same spec)."""

    kind = "TrainingRuntime"


class TrainJob(ObjectBuilder):
    """A TrainJob naming a runtime (a ClusterTrainingRuntime unless told otherwise)."""

    api_version = TRAINER_API_VERSION
    kind = "TrainJob"

    def __init__(
        self,
        name: str,
        namespace: str | None = None,
        *,
        runtime: str = "torch",
        runtime_kind: str = "ClusterTrainingRuntime",
    ) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {
            "runtimeRef": {
                "name": runtime,
                "apiGroup": "trainer.kubeflow.org",
                "kind": runtime_kind,
            }
        }

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

    def suspend(self, suspended: bool = True) -> Self:
        return self.spec(suspend=suspended)

    def managed_by(self, controller: str = MULTIKUEUE_CONTROLLER) -> Self:
        return self.spec(managedBy=controller)

    def num_nodes(self, nodes: int) -> Self:
        self._at("spec", "trainer")["numNodes"] = nodes
        return self

    def resources_per_node(
        self, requests: Mapping[str, str], limits: Mapping[str, str] | None = None
    ) -> Self:
        resources: dict[str, Any] = {"requests": dict(requests)}
        if limits:
            resources["limits"] = dict(limits)
        self._at("spec", "trainer")["resourcesPerNode"] = resources
        return self

    def pod_spec_override(self, targets: Sequence[str], **fields: Any) -> Self:
        """Append a podSpecOverrides entry for the named replicated jobs."""
        overrides = self._obj["spec"].setdefault("podSpecOverrides", [])
        overrides.append({"targetJobs": [{"name": t} for t in targets], **fields})
        return self


def kwok_training_runtime(
    name: str = "kwok-torch-distributed",
    *,
    run_seconds: float = 5,
    namespaced: bool = False,
) -> ClusterTrainingRuntime:
    """`devfleet.sample_jobs.kwok_training_runtime` as a builder: one `node` replicated
    job (the trainer) of 1 CPU, 1Gi pods running `run_seconds` on kwok nodes."""
    node = (
        Job("node", container="node", image="registry.invalid/torch:latest")
        .backoff_limit(0)
        .kwok_run(run_seconds)
        .requests({"cpu": "1", "memory": "1Gi"})
    )
    builder = TrainingRuntime(name) if namespaced else ClusterTrainingRuntime(name)
    return builder.replicated_job("node", node, ancestor="trainer")


def kwok_trainjob(
    name: str,
    *,
    nodes: int,
    gpus_per_node: int,
    runtime: str = "kwok-torch-distributed",
    runtime_kind: str = "ClusterTrainingRuntime",
) -> TrainJob:
    """`devfleet.sample_jobs.gpu_trainjob` as a builder."""
    limits = {GPU: str(gpus_per_node)} if gpus_per_node else None
    return (
        TrainJob(name, runtime=runtime, runtime_kind=runtime_kind)
        .num_nodes(nodes)
        .resources_per_node({"cpu": "1", "memory": "1Gi"}, limits)
    )
