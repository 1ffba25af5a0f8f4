"""The demo's job mix: one JobSet among the Jobs, and the manifests it submits."""

from __future__ import annotations

from typing import Any

import pytest

from devfleet.demo_jobs import (
    MULTIKUEUE_MANAGED_BY,
    POOL_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    DemoJob,
    JobApi,
    JobKind,
    job_manifest,
    job_mix,
    submit_job,
)


def _jobsets(jobs: tuple[DemoJob, ...]) -> list[DemoJob]:
    return [job for job in jobs if job.api is JobApi.JOBSET]


@pytest.mark.parametrize("short", [True, False])
def test_both_mixes_hold_one_jobset_of_a_driver_and_four_4_gpu_workers(short: bool) -> None:
    jobs = job_mix(short=short)
    (jobset,) = _jobsets(jobs)
    assert jobset.key == "team-a/llm-pretrain-js"
    assert (jobset.kind, jobset.drivers, jobset.pods, jobset.per_pod) == (JobKind.GPU, 1, 4, 4)
    assert jobset.shape == "1 CPU + 4x4 GPU"
    assert jobset.run_seconds <= 15
    assert len({job.key for job in jobs}) == len(jobs)
    others = [job for job in jobs if job.api is JobApi.JOB]
    assert others and all(job.drivers == 0 for job in others)
    assert {job.kind for job in others} == {JobKind.GPU, JobKind.CPU}


def test_the_short_mix_is_the_full_mixs_first_wave() -> None:
    short = [job.key for job in job_mix(short=True)]
    full = [job.key for job in job_mix(short=False)]
    assert full[: len(short)] == short and len(full) > len(short)


def test_a_job_shows_its_pods_and_what_each_asks() -> None:
    jobs = {job.name: job for job in job_mix(short=True)}
    assert jobs["pretrain-llm"].shape == "4x8 GPU"
    assert jobs["etl-nightly"].shape == "8x8 CPU"
    assert JobApi.JOB.kind == "Job" and JobApi.JOBSET.kind == "JobSet"
    assert JobApi.JOB.pod_label == "job-name"
    assert JobApi.JOBSET.pod_label == "jobset.sigs.k8s.io/jobset-name"


def _containers(pod_template_job_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pod_template_job_spec["template"]["spec"]["containers"])


def test_the_jobset_manifest_is_suspended_for_multikueue_with_a_driver_and_gpu_workers() -> None:
    (jobset,) = _jobsets(job_mix(short=True))
    manifest = job_manifest(jobset)
    assert (manifest["apiVersion"], manifest["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert manifest["metadata"]["name"] == "llm-pretrain-js"
    assert manifest["metadata"]["namespace"] == "team-a"
    labels = manifest["metadata"]["labels"]
    assert labels[QUEUE_LABEL] == "user-queue" and labels[PRIORITY_CLASS_LABEL] == "normal"
    assert manifest["spec"]["suspend"] is True
    assert manifest["spec"]["managedBy"] == MULTIKUEUE_MANAGED_BY
    replicated = {rj["name"]: rj for rj in manifest["spec"]["replicatedJobs"]}
    assert [(name, rj["replicas"]) for name, rj in replicated.items()] == [
        ("driver", 1),
        ("workers", 4),
    ]
    (driver,) = _containers(replicated["driver"]["template"]["spec"])
    (worker,) = _containers(replicated["workers"]["template"]["spec"])
    assert "limits" not in driver["resources"] and driver["resources"]["requests"]["cpu"] == "1"
    assert worker["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    for rj in replicated.values():
        pod_spec = rj["template"]["spec"]["template"]["spec"]
        assert pod_spec["nodeSelector"] == {POOL_LABEL: "gpu"}


def test_a_job_manifest_is_still_a_suspended_batch_job() -> None:
    job = next(job for job in job_mix(short=True) if job.name == "etl-nightly")
    manifest = job_manifest(job)
    assert (manifest["apiVersion"], manifest["kind"]) == ("batch/v1", "Job")
    assert manifest["spec"]["parallelism"] == 8 and manifest["spec"]["suspend"] is True
    assert manifest["spec"]["managedBy"] == MULTIKUEUE_MANAGED_BY
    (container,) = _containers(manifest["spec"])
    assert container["resources"]["requests"] == {"cpu": "8", "memory": "4Gi"}


def test_a_cpu_jobset_is_refused() -> None:
    job = DemoJob("x", "team-a", JobKind.CPU, 2, 4, "low", 5, 0, JobApi.JOBSET, 1)
    with pytest.raises(ValueError, match="driver and GPU workers"):
        job_manifest(job)


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, api_client: Any) -> _Recorder:
        return self

    def create_namespaced_custom_object(self, *args: Any) -> None:
        self.calls.append(("custom", args))

    def create_namespaced_job(self, *args: Any) -> None:
        self.calls.append(("batch", args))


def test_submit_creates_a_jobset_as_a_custom_object_and_a_job_through_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubernetes import client

    recorder = _Recorder()
    monkeypatch.setattr(client, "CustomObjectsApi", recorder)
    monkeypatch.setattr(client, "BatchV1Api", recorder)
    jobs = {job.name: job for job in job_mix(short=True)}
    submit_job(object(), jobs["llm-pretrain-js"])
    submit_job(object(), jobs["pretrain-llm"])
    (custom, args), (batch, batch_args) = recorder.calls
    assert custom == "custom" and args[:4] == ("jobset.x-k8s.io", "v1alpha2", "team-a", "jobsets")
    assert args[4]["kind"] == "JobSet"
    assert batch == "batch" and batch_args[0] == "team-a" and batch_args[1]["kind"] == "Job"


def test_the_full_mix_has_one_cpu_rayjob_labelled_for_the_demo_and_handed_to_multikueue() -> None:
    (rayjob,) = [job for job in job_mix(short=False) if job.api is JobApi.RAYJOB]
    assert rayjob.api.kind == "RayJob" and rayjob.shape == "1 CPU + 2x4 CPU"
    manifest = job_manifest(rayjob)
    assert (manifest["apiVersion"], manifest["kind"]) == ("ray.io/v1", "RayJob")
    assert manifest["spec"]["suspend"] is True
    assert manifest["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert manifest["spec"]["shutdownAfterJobFinishes"] is True
    cluster = manifest["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]
    (workers,) = cluster["workerGroupSpecs"]
    assert workers["replicas"] == 2
    for template in (head, workers["template"]):
        assert template["metadata"]["labels"][JobApi.RAYJOB.pod_label] == "ray-tune"
        assert template["spec"]["nodeSelector"] == {"fleetq.dev/node-pool": "cpu"}
    (container,) = workers["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "4", "memory": "4Gi"}
    assert all(job.api is not JobApi.RAYJOB for job in job_mix(short=True))


def test_both_mixes_hold_one_pytorchjob_of_a_master_and_four_4_gpu_workers_for_multikueue() -> None:
    for short in (True, False):
        (pytorchjob,) = [job for job in job_mix(short=short) if job.api is JobApi.PYTORCHJOB]
        assert pytorchjob.key == "team-b/llm-finetune-pt"
        assert pytorchjob.shape == "1 CPU + 4x4 GPU"
    assert JobApi.PYTORCHJOB.kind == "PyTorchJob"
    assert JobApi.PYTORCHJOB.pod_label == "training.kubeflow.org/job-name"
    manifest = job_manifest(pytorchjob)
    assert (manifest["apiVersion"], manifest["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert manifest["spec"]["runPolicy"] == {
        "suspend": True,
        "managedBy": MULTIKUEUE_MANAGED_BY,
    }
    assert "suspend" not in manifest["spec"] and "managedBy" not in manifest["spec"]
    specs = manifest["spec"]["pytorchReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in specs.items()} == {"Master": 1, "Worker": 4}
    (master,) = specs["Master"]["template"]["spec"]["containers"]
    (worker,) = specs["Worker"]["template"]["spec"]["containers"]
    assert master["name"] == worker["name"] == "pytorch"  # what the operator's webhook wants
    assert "limits" not in master["resources"]
    assert worker["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    for spec in specs.values():
        assert spec["template"]["spec"]["nodeSelector"] == {POOL_LABEL: "gpu"}


@pytest.mark.parametrize("short", [True, False])
def test_both_mixes_serve_one_small_inference_deployment_on_worker_2(short: bool) -> None:
    (serving,) = [job for job in job_mix(short=short) if job.serving]
    assert (serving.key, serving.api, serving.cluster) == (
        "team-a/embed-server",
        JobApi.DEPLOYMENT,
        "worker-2",
    )
    assert (serving.kind, serving.pods, serving.per_pod) == (JobKind.CPU, 2, 2)
    assert JobApi.DEPLOYMENT.kind == "Deployment" and JobApi.DEPLOYMENT.pod_label == "app"


def test_the_deployment_manifest_is_as_the_pod_and_deployment_webhooks_leave_it() -> None:
    (serving,) = [job for job in job_mix(short=True) if job.serving]
    manifest = job_manifest(serving)
    assert (manifest["apiVersion"], manifest["kind"]) == ("apps/v1", "Deployment")
    assert manifest["spec"]["replicas"] == 2
    template = manifest["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert labels[QUEUE_LABEL] == "user-queue" and labels["kueue.x-k8s.io/managed"] == "true"
    assert labels["app"] == "embed-server"
    assert template["metadata"]["annotations"] == {
        "kueue.x-k8s.io/pod-suspending-parent": "deployment"
    }
    assert template["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    assert template["spec"]["nodeSelector"] == {POOL_LABEL: "cpu"}
    (container,) = template["spec"]["containers"]
    assert container["resources"]["requests"]["cpu"] == "2"
