"""The real JobSet controller (v0.10.1, out of cluster, one per fleet member) works.

On a full worker a plain JobSet (no queue) is defaulted by JobSet's webhook, creates its
child Jobs, their pods are scheduled on kwok nodes and run for the time their annotation
asks, and the JobSet completes. On the API-only manager the controller runs too and leaves
a JobSet managed by MultiKueue (`spec.managedBy`) alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.conditions import is_true
from devfleet.kwok_stages import RUN_DURATION_ANNOTATION, RUN_JITTER_ANNOTATION
from devfleet.operators.jobset import JOBSET, JOBSET_API_VERSION, JOBSET_GROUP
from devfleet.operators.webhook_manifests import webhook_configuration_name
from devfleet.polling import until

NamespaceFactory = Callable[..., str]
Json = dict[str, Any]
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def _replicated_job(name: str, replicas: int, run_seconds: int) -> Json:
    delay = f"{run_seconds}s"
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "backoffLimit": 0,
                "template": {
                    "metadata": {
                        "annotations": {
                            RUN_DURATION_ANNOTATION: delay,
                            RUN_JITTER_ANNOTATION: delay,
                        }
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": name,
                                "image": "fake.example/trainer:latest",
                                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                            }
                        ]
                    },
                },
            }
        },
    }


def _jobset(name: str, *, run_seconds: int = 2, managed_by: str | None = None) -> Json:
    spec: Json = {
        "replicatedJobs": [
            _replicated_job("driver", 1, run_seconds),
            _replicated_job("workers", 2, run_seconds),
        ]
    }
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_API_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def _create(member: ClusterAccess, namespace: str, body: Json) -> Json:
    with member.api_client() as api_client:
        created: Json = client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_API_VERSION, namespace, "jobsets", body
        )
    return created


def _get(member: ClusterAccess, namespace: str, name: str) -> Json:
    with member.api_client() as api_client:
        found: Json = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_API_VERSION, namespace, "jobsets", name
        )
    return found


def _child_jobs(member: ClusterAccess, namespace: str, jobset: str) -> list[Any]:
    with member.api_client() as api_client:
        jobs = client.BatchV1Api(api_client).list_namespaced_job(
            namespace, label_selector=f"{JOBSET_NAME_LABEL}={jobset}"
        )
    return list(jobs.items)


def _pods(member: ClusterAccess, namespace: str, jobset: str) -> list[Any]:
    with member.api_client() as api_client:
        pods = client.CoreV1Api(api_client).list_namespaced_pod(
            namespace, label_selector=f"{JOBSET_NAME_LABEL}={jobset}"
        )
    return list(pods.items)


def test_a_jobset_runs_its_jobs_on_kwok_nodes_and_completes(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory
) -> None:
    worker = full_fleet.cluster("worker-1")
    namespace = namespace_factory("jobset", clusters=(worker,))
    began = time.monotonic()
    _create(worker, namespace, _jobset("train", run_seconds=2))

    # The defaulting webhook ran: the CRD's schema defaults none of these.
    stored = _get(worker, namespace, "train")
    assert stored["spec"]["successPolicy"]["operator"] == "All"
    assert stored["spec"]["startupPolicy"]["startupPolicyOrder"] == "AnyOrder"
    assert stored["spec"]["network"]["enableDNSHostnames"] is True
    for replicated in stored["spec"]["replicatedJobs"]:
        assert replicated["template"]["spec"]["completionMode"] == "Indexed"

    def three_jobs() -> list[Any] | None:
        found = _child_jobs(worker, namespace, "train")
        return found if len(found) == 3 else None

    def completed() -> Json | None:
        jobset = _get(worker, namespace, "train")
        return jobset if is_true(jobset, "Completed") or is_true(jobset, "Failed") else None

    jobs = until(three_jobs, "the JobSet's three child Jobs", timeout=60)
    assert sorted(job.metadata.name for job in jobs) == [
        "train-driver-0",
        "train-workers-0",
        "train-workers-1",
    ]
    assert all(job.metadata.owner_references[0].kind == "JobSet" for job in jobs)

    finished = until(completed, "the JobSet Completed (or Failed)", timeout=120)
    assert is_true(finished, "Completed"), finished["status"]
    statuses = {s["name"]: s for s in finished["status"]["replicatedJobsStatus"]}
    assert statuses["driver"]["succeeded"] == 1
    assert statuses["workers"]["succeeded"] == 2

    pods = _pods(worker, namespace, "train")
    succeeded = [pod for pod in pods if pod.status.phase == "Succeeded"]
    assert len(succeeded) == 3, [(p.metadata.name, p.status.phase) for p in pods]
    assert all(pod.spec.node_name.startswith("worker-1-gpu-") for pod in succeeded)
    # Each pod ran the 2 s its annotation asked for before its Job could succeed.
    assert time.monotonic() - began >= 2


def test_every_member_runs_the_controller_and_the_manager_leaves_multikueue_jobsets_alone(
    full_fleet: RunningFleet, namespace_factory: NamespaceFactory
) -> None:
    for member in full_fleet.all:
        with member.api_client() as api_client:
            admission = client.AdmissionregistrationV1Api(api_client)
            mutating = admission.read_mutating_webhook_configuration(
                webhook_configuration_name("MutatingWebhookConfiguration", JOBSET.webhook_prefix)
            )
            admission.read_validating_webhook_configuration(
                webhook_configuration_name("ValidatingWebhookConfiguration", JOBSET.webhook_prefix)
            )
        url = mutating.webhooks[0].client_config.url
        assert url.startswith("https://127.0.0.1:"), (member.name, url)

    manager = full_fleet.manager
    namespace = namespace_factory("jobset-mk", clusters=(manager,))
    _create(manager, namespace, _jobset("plain"))
    _create(manager, namespace, _jobset("remote", managed_by=MULTIKUEUE))
    # The controller works on the manager: the plain JobSet gets its Jobs (they get no
    # pods, the manager has no Job controller)...
    until(
        lambda: len(_child_jobs(manager, namespace, "plain")) == 3,
        "the manager's plain JobSet's child Jobs",
        timeout=60,
    )
    time.sleep(1.0)
    # ...and by then it has seen the MultiKueue one too, and left it alone.
    assert _child_jobs(manager, namespace, "remote") == []
    remote = _get(manager, namespace, "remote")
    assert remote["spec"]["managedBy"] == MULTIKUEUE
    assert not (remote.get("status") or {}).get("replicatedJobsStatus")
