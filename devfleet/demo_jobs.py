"""The jobs `make demo` submits: a mix of GPU and CPU work, two teams, three priorities.

The mix is chosen so the story shows in a minute or two: the first GPU job fills worker-1's
GPUs, the next one goes to worker-2 (the hub places by the workers' capacity reports), CPU
jobs go to worker-2's CPU nodes, and later GPU jobs wait on the manager until GPUs free up,
the high-priority one ahead of an older low-priority one. One of them is a JobSet
(jobset.x-k8s.io/v1alpha2, run by the real JobSet controller on every cluster): a CPU
driver and 4 GPU workers, one Workload on the manager, placed whole on one worker, where
its worker pods spread over the GPU nodes. The full mix also has a RayJob (ray.io/v1, run
by the real KubeRay operator on every cluster): a head and CPU workers plus KubeRay's
submitter, one Workload, on worker-2's CPU nodes.

Beside the batch jobs runs one small inference Deployment (`embed-server`, 2 replicas of
2 CPUs), created on worker-2 itself: MultiKueue does not dispatch plain Pods, so its
replicas are queued by worker-2's agent, each its own Workload, within worker-2's quota
(the `pod` and `deployment` frameworks, docs/pods.md). It serves until the demo ends.

Jobs, JobSets, the RayJob and the PyTorchJob are created as the hub's webhook would leave
them (suspended, `managedBy` MultiKueue), the Deployment as the Pod and Deployment webhooks
would (its pod template gated and marked managed): the demo runs the hub and the agents
without webhooks (see devfleet/chart_install.py for why).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from devfleet.sample_jobs import gpu_job, gpu_jobset, gpu_pytorchjob, gpu_rayjob

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MULTIKUEUE_MANAGED_BY = "kueue.x-k8s.io/multikueue"
DEMO_LABEL = "fleetq.dev/demo"
POOL_LABEL = "fleetq.dev/node-pool"
LOCAL_QUEUE = "user-queue"
"""The LocalQueue name clusters.example.yaml mirrors onto the workers."""
NAMESPACES = ("team-a", "team-b")
JOB_NAME_LABEL = "job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
RAYJOB = ("ray.io", "v1", "rayjobs")
RAYJOB_POD_LABEL = "fleetq.dev/demo-rayjob"
"""Label the demo puts on a RayJob's head and worker pod templates, valued with its name
(KubeRay labels the pods with its generated cluster's name only)."""
KUBEFLOW_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
PYTORCHJOB = ("kubeflow.org", "v1", "pytorchjobs")
APP_LABEL = "app"
"""Names a demo Deployment on its pods."""
ADMISSION_GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"


class JobKind(StrEnum):
    """What a job's (worker) pods ask for, and so the node pool they run on."""

    GPU = "gpu"
    CPU = "cpu"


class JobApi(StrEnum):
    """The object a demo job is: a batch/v1 Job, a JobSet, a RayJob, a PyTorchJob or a
    serving Deployment."""

    JOB = "job"
    JOBSET = "jobset"
    RAYJOB = "rayjob"
    PYTORCHJOB = "pytorchjob"
    DEPLOYMENT = "deployment"

    @property
    def kind(self) -> str:
        return {
            JobApi.JOB: "Job",
            JobApi.JOBSET: "JobSet",
            JobApi.RAYJOB: "RayJob",
            JobApi.PYTORCHJOB: "PyTorchJob",
            JobApi.DEPLOYMENT: "Deployment",
        }[self]

    @property
    def pod_label(self) -> str:
        """The label naming the object on its pods (a JobSet's pods carry both)."""
        return {
            JobApi.JOB: JOB_NAME_LABEL,
            JobApi.JOBSET: JOBSET_NAME_LABEL,
            JobApi.RAYJOB: RAYJOB_POD_LABEL,
            JobApi.PYTORCHJOB: KUBEFLOW_JOB_NAME_LABEL,
            JobApi.DEPLOYMENT: APP_LABEL,
        }[self]


PRIORITIES: dict[str, int] = {"high": 1000, "normal": 500, "low": 100}
"""WorkloadPriorityClass name → value (created on the manager and every worker)."""


@dataclass(frozen=True, slots=True)
class DemoJob:
    """One job of the mix and when to submit it (seconds after the first)."""

    name: str
    namespace: str
    kind: JobKind
    pods: int
    """The Job's pods; a JobSet's worker pods (one child Job each)."""
    per_pod: int
    """GPUs per pod for GPU jobs, CPUs per pod for CPU jobs (a JobSet's workers)."""
    priority: str
    run_seconds: float
    submit_at: float
    api: JobApi = JobApi.JOB
    drivers: int = 0
    """A JobSet's driver pods, a RayJob's head or a PyTorchJob's master (1 CPU, no GPU
    each), besides its workers."""
    cluster: str | None = None
    """Where it is created: a worker (queued there by its agent); None: the manager."""

    @property
    def serving(self) -> bool:
        """A Deployment: it never finishes; done for the demo once every replica runs."""
        return self.api is JobApi.DEPLOYMENT

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def shape(self) -> str:
        unit = "GPU" if self.kind is JobKind.GPU else "CPU"
        driver = f"{self.drivers} CPU + " if self.drivers else ""
        return f"{driver}{self.pods}x{self.per_pod} {unit}"


def job_mix(*, short: bool) -> tuple[DemoJob, ...]:
    """The full mix (about a minute of work) or the short one the test runs."""
    scale = 0.3 if short else 1.0

    def job(
        name: str,
        namespace: str,
        kind: JobKind,
        pods: int,
        per_pod: int,
        priority: str,
        run_seconds: float,
        submit_at: float,
        api: JobApi = JobApi.JOB,
    ) -> DemoJob:
        run = max(4.0, round(run_seconds * scale))
        drivers = 1 if api in (JobApi.JOBSET, JobApi.RAYJOB, JobApi.PYTORCHJOB) else 0
        return DemoJob(name, namespace, kind, pods, per_pod, priority, run, submit_at, api, drivers)

    first_wave: tuple[DemoJob, ...] = (
        # 32 GPUs: all of worker-1's H100s.
        job("pretrain-llm", "team-a", JobKind.GPU, 4, 8, "normal", 30, 0),
        # More than 32 CPUs: worker-1 keeps its CPUs for GPU jobs, so only worker-2 fits.
        job("etl-nightly", "team-b", JobKind.CPU, 8, 8, "low", 15, 1),
        # 16 GPUs, submitted once worker-1 reports its GPUs taken: worker-2's A100s.
        job("finetune-vision", "team-b", JobKind.GPU, 2, 8, "normal", 20, 5),
        # No GPU quota left on the manager: both wait; high priority goes first.
        job("eval-sweep", "team-a", JobKind.GPU, 1, 4, "low", 15, 7),
        job("rl-policy", "team-b", JobKind.GPU, 2, 4, "high", 15, 8),
        # A JobSet: a driver and 4 workers of 4 GPUs, one Workload placed whole on one
        # worker once GPUs free up; 16 GPUs on nodes of 8, so its workers spread over nodes.
        job("llm-pretrain-js", "team-a", JobKind.GPU, 4, 4, "normal", 15, 9, JobApi.JOBSET),
        # A Kubeflow PyTorchJob: 1 CPU master + 4 workers of 4 GPUs, one Workload with pod
        # sets master and worker, placed whole on the worker that has room for all of it.
        job("llm-finetune-pt", "team-b", JobKind.GPU, 4, 4, "normal", 15, 10, JobApi.PYTORCHJOB),
    )
    first_wave = (
        *first_wave[:2],
        # Inference beside the batch work: 2 replicas of 2 CPUs on worker-2's CPU nodes,
        # each replica a Pod queued (gated, then admitted) by worker-2's agent.
        DemoJob(
            "embed-server",
            "team-a",
            JobKind.CPU,
            2,
            2,
            "normal",
            0.0,
            2,
            JobApi.DEPLOYMENT,
            cluster="worker-2",
        ),
        *first_wave[2:],
    )
    if short:
        return first_wave
    return (
        *first_wave,
        job("preprocess", "team-a", JobKind.CPU, 6, 8, "normal", 10, 10),
        job("embed-corpus", "team-a", JobKind.GPU, 1, 2, "normal", 10, 11),
        job("batch-infer", "team-b", JobKind.GPU, 1, 8, "low", 15, 12),
        # A RayJob: a head and 2 workers of 4 CPUs on worker-2's CPU nodes, plus KubeRay's
        # submitter, whose run time is the RayJob's.
        job("ray-tune", "team-b", JobKind.CPU, 2, 4, "normal", 10, 13, JobApi.RAYJOB),
    )


def deployment_manifest(job: DemoJob) -> dict[str, Any]:
    """The Deployment for `job` as the Deployment and Pod webhooks would leave it: its pod
    template carries the queue and priority labels, `kueue.x-k8s.io/managed=true`, the
    pod-suspending-parent annotation and the admission scheduling gate."""
    labels = {QUEUE_LABEL: LOCAL_QUEUE, PRIORITY_CLASS_LABEL: job.priority}
    pod_labels = {APP_LABEL: job.name, MANAGED_LABEL: "true", **labels}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": {**labels, DEMO_LABEL: "true"},
        },
        "spec": {
            "replicas": job.pods,
            "selector": {"matchLabels": {APP_LABEL: job.name}},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {SUSPENDING_PARENT_ANNOTATION: "deployment"},
                },
                "spec": {
                    "schedulingGates": [{"name": ADMISSION_GATE}],
                    "nodeSelector": {POOL_LABEL: job.kind.value},
                    "containers": [
                        {
                            "name": "server",
                            "image": "registry.invalid/embed-server",
                            "resources": {"requests": {"cpu": str(job.per_pod), "memory": "2Gi"}},
                        }
                    ],
                },
            },
        },
    }


def job_manifest(job: DemoJob) -> dict[str, Any]:
    """The batch/v1 Job, the JobSet or the Deployment for `job`, labelled for its
    LocalQueue and priority class. A JobSet's driver runs in its workers' node pool
    (worker-1 has no CPU pool)."""
    if job.api is JobApi.DEPLOYMENT:
        return deployment_manifest(job)
    gpus = job.per_pod if job.kind is JobKind.GPU else 0
    selector = {POOL_LABEL: job.kind.value}
    if job.api is JobApi.PYTORCHJOB:
        if job.kind is not JobKind.GPU or job.drivers != 1:
            raise ValueError(f"{job.key}: a demo PyTorchJob is one master and GPU workers")
        manifest = gpu_pytorchjob(
            job.name,
            workers=job.pods,
            gpus_per_worker=gpus,
            run_seconds=job.run_seconds,
            node_selector=selector,
        )
    elif job.api is JobApi.JOBSET:
        if job.kind is not JobKind.GPU or job.drivers != 1:
            raise ValueError(f"{job.key}: a demo JobSet is one driver and GPU workers")
        manifest = gpu_jobset(
            job.name,
            workers=job.pods,
            gpus_per_worker=gpus,
            run_seconds=job.run_seconds,
            node_selector=selector,
        )
    elif job.api is JobApi.RAYJOB:
        manifest = _rayjob_manifest(job, gpus, selector)
    else:
        manifest = gpu_job(
            job.name,
            gpus_per_pod=gpus,
            pods=job.pods,
            run_seconds=job.run_seconds,
            node_selector=selector,
        )
    if job.kind is JobKind.CPU and job.api is not JobApi.RAYJOB:
        (container,) = manifest["spec"]["template"]["spec"]["containers"]
        container["resources"]["requests"] = {"cpu": str(job.per_pod), "memory": "4Gi"}
    manifest["metadata"].update(
        {
            "namespace": job.namespace,
            "labels": {
                QUEUE_LABEL: LOCAL_QUEUE,
                PRIORITY_CLASS_LABEL: job.priority,
                DEMO_LABEL: "true",
            },
        }
    )
    # Where the kind keeps suspend and managedBy: a PyTorchJob in its runPolicy.
    holder = manifest["spec"]["runPolicy"] if job.api is JobApi.PYTORCHJOB else manifest["spec"]
    holder["suspend"] = True
    holder["managedBy"] = MULTIKUEUE_MANAGED_BY
    return manifest


def _rayjob_manifest(job: DemoJob, gpus: int, selector: dict[str, str]) -> dict[str, Any]:
    manifest = gpu_rayjob(
        job.name,
        workers=job.pods,
        gpus_per_worker=gpus,
        run_seconds=job.run_seconds,
        node_selector=selector,
    )
    cluster = manifest["spec"]["rayClusterSpec"]
    templates = [cluster["headGroupSpec"]["template"]]
    templates += [group["template"] for group in cluster["workerGroupSpecs"]]
    for template in templates:
        template.setdefault("metadata", {}).setdefault("labels", {})[RAYJOB_POD_LABEL] = job.name
    if job.kind is JobKind.CPU:
        (container,) = templates[-1]["spec"]["containers"]
        container["resources"]["requests"] = {"cpu": str(job.per_pod), "memory": "4Gi"}
    return manifest


def submit_job(api_client: Any, job: DemoJob) -> None:
    """Create `job`'s object on the cluster `api_client` talks to."""
    from kubernetes import client

    manifest = job_manifest(job)
    if job.api is JobApi.DEPLOYMENT:
        client.AppsV1Api(api_client).create_namespaced_deployment(job.namespace, manifest)
    elif job.api in (JobApi.JOBSET, JobApi.RAYJOB, JobApi.PYTORCHJOB):
        group, version, plural = {
            JobApi.JOBSET: JOBSET,
            JobApi.RAYJOB: RAYJOB,
            JobApi.PYTORCHJOB: PYTORCHJOB,
        }[job.api]
        custom = client.CustomObjectsApi(api_client)
        custom.create_namespaced_custom_object(group, version, job.namespace, plural, manifest)
    else:
        client.BatchV1Api(api_client).create_namespaced_job(job.namespace, manifest)


def priority_class_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": f"demo priority {name}",
        }
        for name, value in PRIORITIES.items()
    ]
