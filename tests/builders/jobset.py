"""jobset.x-k8s.io/v1alpha2 JobSets, as tests submit them (upstream: `testingjobs/jobset`).

A JobSet is a list of replicated jobs, each a Job template and a replica count; a test
adds them with `replicated_job(name, replicas, Job(...))`, reusing the Job builder for the
child template (pod template methods, kwok run time, requests), so a JobSet's pods are
built exactly like a Job's.
"""

from __future__ import annotations

from typing import Self

from tests.builders.base import (
    MULTIKUEUE_CONTROLLER,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    ObjectBuilder,
)
from tests.builders.job import Job


class JobSet(ObjectBuilder):
    """A JobSet with no replicated jobs until a test adds them."""

    api_version = "jobset.x-k8s.io/v1alpha2"
    kind = "JobSet"

    def __init__(self, name: str, namespace: str | None = None) -> None:
        super().__init__(name, namespace)
        self._obj["spec"] = {"replicatedJobs": []}

    def replicated_job(self, name: str, replicas: int, job: Job) -> Self:
        """Append a replicated job whose child Jobs are `job`'s spec (its metadata unused)."""
        self._obj["spec"]["replicatedJobs"].append(
            {"name": name, "replicas": replicas, "template": {"spec": job.obj()["spec"]}}
        )
        return self

    def queue(self, local_queue: str) -> Self:
        return self.label(QUEUE_LABEL, local_queue)

    def priority_class(self, workload_priority_class: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, workload_priority_class)

    def suspend(self, suspended: bool = True) -> Self:
        return self.spec(suspend=suspended)

    def managed_by(self, controller: str = MULTIKUEUE_CONTROLLER) -> Self:
        return self.spec(managedBy=controller)


def kwok_jobset(name: str, *, workers: int, gpus_per_worker: int, run_seconds: float) -> JobSet:
    """`devfleet.sample_jobs.gpu_jobset` as a builder (tests/unit/test_builders.py keeps the
    two equal): a one-pod CPU `driver` and `workers` one-pod GPU child Jobs."""
    from tests.builders.job import kwok_job

    def child(gpus: int) -> Job:
        return kwok_job("child", gpus_per_pod=gpus, pods=1, run_seconds=run_seconds)

    return (
        JobSet(name)
        .replicated_job("driver", 1, child(0))
        .replicated_job("workers", workers, child(gpus_per_worker))
    )
