"""batch/v1 Jobs, as tests submit them (upstream: `testingjobs/job.MakeJob`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from tests.builders.base import (
    MULTIKUEUE_CONTROLLER,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    Json,
    ObjectBuilder,
)
from tests.builders.pod import PodTemplate, PodTemplateMethods, template_of

JOB_IMAGE = "registry.invalid/train:latest"
GPU = "nvidia.com/gpu"


class Job(PodTemplateMethods, ObjectBuilder):
    """A Job with one container `main` (restartPolicy Never) and nothing else set: no
    suspend, parallelism or requests until a test asks, so each test shows what it relies
    on. Pod template methods (`request`, `node_selector`, `kwok_run`, ...) edit
    `spec.template`."""

    api_version = "batch/v1"
    kind = "Job"

    def __init__(
        self,
        name: str,
        namespace: str | None = None,
        *,
        container: str = "main",
        image: str = JOB_IMAGE,
    ) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {"template": PodTemplate(container, image).obj()}

    def _pod_template(self) -> Json:
        template: Json = self._obj["spec"]["template"]
        return template

    def queue(self, local_queue: str) -> Self:
        """The queue-name label that makes Kueue manage the Job."""
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

    def prebuilt_workload(self, workload: str) -> Self:
        """The label a MultiKueue copy carries: its Workload already exists."""
        return self.label(PREBUILT_WORKLOAD_LABEL, workload)

    def suspend(self, suspended: bool = True) -> Self:
        """Created suspended, as the Job webhook would make it where none runs."""
        return self.spec(suspend=suspended)

    def parallelism(self, count: int) -> Self:
        return self.spec(parallelism=count)

    def completions(self, count: int) -> Self:
        return self.spec(completions=count)

    def pods(self, count: int) -> Self:
        """parallelism = completions = `count`: all pods at once, each once."""
        return self.spec(parallelism=count, completions=count)

    def completion_mode(self, mode: str) -> Self:
        """ "Indexed" or "NonIndexed"."""
        return self.spec(completionMode=mode)

    def backoff_limit(self, limit: int) -> Self:
        return self.spec(backoffLimit=limit)

    def managed_by(self, controller: str = MULTIKUEUE_CONTROLLER) -> Self:
        """spec.managedBy: by default MultiKueue's, so the local Job controller keeps off."""
        return self.spec(managedBy=controller)

    def template(self, template: PodTemplate | Mapping[str, Any]) -> Self:
        """Replace the whole pod template (e.g. one shared with a Workload's pod set)."""
        self._obj["spec"]["template"] = template_of(template)
        return self


def kwok_job(
    name: str,
    *,
    gpus_per_pod: int,
    pods: int,
    run_seconds: float,
    node_selector: Mapping[str, str] | None = None,
) -> Job:
    """`devfleet.sample_jobs.gpu_job` as a builder (tests/unit/test_builders.py keeps the
    two equal): `pods` pods of 1 CPU and 1Gi, `gpus_per_pod` GPUs as a limit (0: none),
    running `run_seconds` on kwok nodes, no retries."""
    job = (
        Job(name)
        .pods(pods)
        .backoff_limit(0)
        .kwok_run(run_seconds)
        .node_selector(node_selector or {})
        .requests({"cpu": "1", "memory": "1Gi"})
    )
    if gpus_per_pod:
        job.limit(GPU, str(gpus_per_pod))
    return job
