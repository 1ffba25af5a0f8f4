"""Reading a Kubeflow Trainer v2.0 TrainJob and its runtimes, kept as plain dicts.

Names and defaults are Trainer's (`trainer.kubeflow.org/v1alpha1`): `spec.runtimeRef`
defaults to a ClusterTrainingRuntime of group `trainer.kubeflow.org`; `spec.suspend` and
`spec.managedBy` are where every Job-like kind keeps them. Kueue records where its own
`spec.podSpecOverrides` begin in the `kueue.x-k8s.io/override-idx` annotation (those
before it are the user's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from integrations.framework.job_kind import JobResource
from integrations.framework.job_metadata import (
    Job,
    annotations_of,
    int_value,
    parse_int,
    section,
    spec,
    status,
)

TRAINER_GROUP: Final = "trainer.kubeflow.org"
TRAINER_VERSION: Final = "v1alpha1"
TRAINJOB_KIND: Final = "TrainJob"
TRAINJOB_CONTROLLER_NAME: Final = "trainer.kubeflow.org/trainjob-controller"
"""The managedBy value meaning "Trainer's own controller" (same as unset)."""

TRAINJOBS: Final = JobResource(TRAINER_GROUP, TRAINER_VERSION, "trainjobs", TRAINJOB_KIND)
TRAINING_RUNTIMES: Final = JobResource(
    TRAINER_GROUP, TRAINER_VERSION, "trainingruntimes", "TrainingRuntime"
)
CLUSTER_TRAINING_RUNTIMES: Final = JobResource(
    TRAINER_GROUP,
    TRAINER_VERSION,
    "clustertrainingruntimes",
    "ClusterTrainingRuntime",
    namespaced=False,
)

FIRST_KUEUE_OVERRIDE_ANNOTATION: Final = "kueue.x-k8s.io/override-idx"
"""Index of the first `podSpecOverrides` entry Kueue appended when it started the job."""
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
"""Label on a runtime's replicated job naming the TrainJob part it runs."""
ANCESTOR_TRAINER: Final = "trainer"
ANCESTOR_DATASET_INITIALIZER: Final = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER: Final = "model-initializer"
NODE: Final = "node"
"""The trainer's container (and, with MPI, the worker replicated job) name."""
JOBSETS: Final = JobResource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
"""The JobSet Trainer creates for a TrainJob (same name and namespace, owned by it)."""
JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"
"""Label holding a child Job's index within its replicated job."""
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
"""Label JobSet puts on every pod; Trainer names the JobSet after the TrainJob."""


@dataclass(frozen=True, slots=True)
class RuntimeRef:
    kind: str
    name: str
    api_group: str

    @property
    def cluster_scoped(self) -> bool:
        return self.kind == CLUSTER_TRAINING_RUNTIMES.kind


def runtime_ref(job: Job) -> RuntimeRef:
    """spec.runtimeRef with Trainer's defaults."""
    ref = section(spec(job), "runtimeRef")
    return RuntimeRef(
        kind=str(ref.get("kind") or CLUSTER_TRAINING_RUNTIMES.kind),
        name=str(ref.get("name") or ""),
        api_group=str(ref.get("apiGroup") or TRAINER_GROUP),
    )


def pod_spec_overrides(job: Job) -> list[Mapping[str, Any]]:
    return [o for o in spec(job).get("podSpecOverrides") or () if isinstance(o, Mapping)]


def first_kueue_override(job: Job) -> int | None:
    """Where Kueue's overrides begin (None: Kueue added none), clamped to the list."""
    value = parse_int(annotations_of(job).get(FIRST_KUEUE_OVERRIDE_ANNOTATION))
    if value is None:
        return None
    return max(0, min(value, len(pod_spec_overrides(job))))


def user_overrides(job: Job) -> list[Mapping[str, Any]]:
    """The overrides the user wrote (those before Kueue's)."""
    overrides = pod_spec_overrides(job)
    first = first_kueue_override(job)
    return overrides if first is None else overrides[:first]


def trainer_spec(job: Job) -> Mapping[str, Any]:
    return section(spec(job), "trainer")


def num_nodes(job: Job) -> int | None:
    return int_value(trainer_spec(job).get("numNodes"))


def _by_name(items: Any) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for item in items or ():
        if isinstance(item, Mapping) and item.get("name"):
            out[str(item["name"])] = item
    return out


def jobs_status(job: Job) -> dict[str, Mapping[str, Any]]:
    """status.jobsStatus by replicated job name (Trainer v2.0 leaves it empty)."""
    return _by_name(status(job).get("jobsStatus"))


def jobset_status(jobset: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A JobSet's status.replicatedJobsStatus by replicated job name (same counts)."""
    return _by_name(section(jobset, "status").get("replicatedJobsStatus"))


def status_count(item: Mapping[str, Any], field: str) -> int:
    return int_value(item.get(field)) or 0
