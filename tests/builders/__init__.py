"""Fluent builders for the manifests tests send to the apiservers: plain dicts in their
JSON shape, one place for every test tier (upstream Kueue's `testingjobs` and
`utiltesting` wrappers are the model).

    job = Job("train", ns).queue("lq").suspend().pods(2).request("cpu", "1").obj()
    cq = ClusterQueue("cq").only_namespace(ns).resource_group(FlavorQuotas("f", {"cpu": "4"}))

A builder starts with the least the kind needs and adds only what a test asks for, so
the call says what the test depends on; `.obj()` returns a fresh deep copy every time.
Helpers that have their own defaults (a fixture's `cluster.job(...)`) build on these.

Adding a kind (JobSet, RayJob, ...): a module `tests/builders/<kind>.py` with a subclass
of `ObjectBuilder` that sets `api_version` and `kind` and has one method per field tests
set (`admission_check.py` is the pattern, ~30 lines); a kind with pod templates mixes in
`PodTemplateMethods` and says where its template is in `_pod_template()` (see `job.py`;
a kind with several, like JobSet's replicatedJobs, can point it at the one last added).
Queue and priority labels go through `label(QUEUE_LABEL, ...)` or a `queue()` of its own.
Then export it here.
"""

from tests.builders.admission_check import AdmissionCheck
from tests.builders.base import (
    KUEUE_API_VERSION,
    MULTIKUEUE_CONTROLLER,
    MULTIKUEUE_ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    Json,
    ObjectBuilder,
    owner_reference,
)
from tests.builders.deployment import Deployment, kwok_inference
from tests.builders.fleetq import MultiKueueClusterSet, WorkerCapacity
from tests.builders.job import GPU, JOB_IMAGE, Job, kwok_job
from tests.builders.jobset import JobSet, kwok_jobset
from tests.builders.kubeflow import (
    JAX,
    KUBEFLOW_V1_KINDS,
    MPI,
    PADDLE,
    PYTORCH,
    TENSORFLOW,
    XGBOOST,
    KubeflowJob,
    KubeflowKind,
    kwok_kubeflow_job,
)
from tests.builders.leaderworkerset import LeaderWorkerSet
from tests.builders.multikueue import MultiKueueCluster, MultiKueueConfig
from tests.builders.pod import (
    KWOK_JITTER_ANNOTATION,
    KWOK_RUN_ANNOTATION,
    POD_IMAGE,
    Pod,
    PodTemplate,
    PodTemplateMethods,
    kwok_pod,
)
from tests.builders.priority import WorkloadPriorityClass
from tests.builders.queues import ClusterQueue, Cohort, FlavorQuotas, LocalQueue, ResourceFlavor
from tests.builders.ray import RayCluster, RayJob, kwok_rayjob
from tests.builders.statefulset import StatefulSet
from tests.builders.trainjob import (
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
    kwok_training_runtime,
    kwok_trainjob,
)
from tests.builders.workload import Workload, pod_set_assignment

__all__ = [
    "GPU",
    "JAX",
    "JOB_IMAGE",
    "KUBEFLOW_V1_KINDS",
    "KUEUE_API_VERSION",
    "KWOK_JITTER_ANNOTATION",
    "KWOK_RUN_ANNOTATION",
    "MPI",
    "MULTIKUEUE_CONTROLLER",
    "MULTIKUEUE_ORIGIN_LABEL",
    "PADDLE",
    "POD_IMAGE",
    "PREBUILT_WORKLOAD_LABEL",
    "PRIORITY_CLASS_LABEL",
    "PYTORCH",
    "QUEUE_LABEL",
    "TENSORFLOW",
    "XGBOOST",
    "AdmissionCheck",
    "ClusterQueue",
    "ClusterTrainingRuntime",
    "Cohort",
    "Deployment",
    "FlavorQuotas",
    "Job",
    "JobSet",
    "Json",
    "KubeflowJob",
    "KubeflowKind",
    "LeaderWorkerSet",
    "LocalQueue",
    "MultiKueueCluster",
    "MultiKueueClusterSet",
    "MultiKueueConfig",
    "ObjectBuilder",
    "Pod",
    "PodTemplate",
    "PodTemplateMethods",
    "RayCluster",
    "RayJob",
    "ResourceFlavor",
    "StatefulSet",
    "TrainJob",
    "TrainingRuntime",
    "WorkerCapacity",
    "Workload",
    "WorkloadPriorityClass",
    "kwok_inference",
    "kwok_job",
    "kwok_jobset",
    "kwok_kubeflow_job",
    "kwok_pod",
    "kwok_rayjob",
    "kwok_training_runtime",
    "kwok_trainjob",
    "owner_reference",
    "pod_set_assignment",
]
