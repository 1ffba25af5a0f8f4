"""The JobSet kind on the seam: pod sets, start and stop, status, webhook rules, MultiKueue."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.api.codec import decode
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_kind import StatusSyncDecision
from integrations.framework.json_patch import apply_patch
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.jobset.kind import JOBSET
from integrations.registry import REGISTRY
from tests.builders import kwok_jobset

QUEUE = "kueue.x-k8s.io/queue-name"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
FLAVOR = decode(
    ResourceFlavor,
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"}},
    },
)


def stored_jobset(**labels: str) -> dict[str, Any]:
    jobset = (
        kwok_jobset("train", workers=4, gpus_per_worker=8, run_seconds=5)
        .namespace("team-a")
        .uid("0f3c5f0e-1b2c-4d5e-8f90-123456789abc")
        .resource_version("7")
        .queue("team")
        .labels(labels)
        .suspend()
    )
    return jobset.obj()


def admitted(workload: Workload) -> Workload:
    workload.status.admission = Admission(
        cluster_queue="gpus",
        pod_set_assignments=[
            PodSetAssignment(
                name=p.name, flavors={"nvidia.com/gpu": "gpu", "cpu": "gpu"}, count=p.count
            )
            for p in workload.spec.pod_sets
        ],
    )
    return workload


def test_the_registry_holds_jobset_under_upstreams_name() -> None:
    assert REGISTRY.get("jobset.x-k8s.io/jobset") is JOBSET
    assert REGISTRY.for_owner("jobset.x-k8s.io/v1alpha2", "JobSet") is JOBSET
    enabled = REGISTRY.enabled(["batch/job", "jobset.x-k8s.io/jobset"])
    assert enabled.queued_as_a_whole == frozenset({("jobset.x-k8s.io", "JobSet")})


def test_one_pod_set_per_replicated_job_in_spec_order() -> None:
    workload = build_workload(JOBSET, stored_jobset(), PriorityClasses())
    assert [(p.name, p.count, p.min_count) for p in workload.spec.pod_sets] == [
        ("driver", 1, None),
        ("workers", 4, None),
    ]
    assert workload.metadata.name.startswith("jobset-train-")
    owner = workload.metadata.owner_references[0]
    assert (owner.api_version, owner.kind, owner.controller) == (
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        True,
    )
    request = workload.spec.pod_sets[1].topology_request
    assert request is not None and request.sub_group_count == 4


def test_pods_per_child_job_follow_parallelism_and_completions() -> None:
    jobset = stored_jobset()
    spec = jobset["spec"]["replicatedJobs"][1]["template"]["spec"]
    spec["parallelism"], spec["completions"] = 4, 2
    assert [p.count for p in JOBSET.pod_sets(jobset)] == [1, 8]


def test_start_unsuspends_and_points_every_replicated_job_at_its_flavor() -> None:
    jobset = stored_jobset()
    workload = admitted(build_workload(JOBSET, jobset, PriorityClasses()))
    started = JOBSET.start(jobset, workload, {"gpu": FLAVOR})
    assert started["spec"]["suspend"] is False
    for replicated in started["spec"]["replicatedJobs"]:
        pod_spec = replicated["template"]["spec"]["template"]["spec"]
        assert pod_spec["nodeSelector"] == {"pool": "gpu"}


def test_stop_suspends_and_restores_the_recorded_templates_in_one_write() -> None:
    jobset = stored_jobset()
    workload = admitted(build_workload(JOBSET, jobset, PriorityClasses()))
    running = JOBSET.start(jobset, workload, {"gpu": FLAVOR})
    writes = JOBSET.plan_stop(running, workload)
    assert len(writes) == 1
    stopped = apply_patch(running, writes[0].patch)
    assert stopped["spec"]["suspend"] is True
    assert stopped["spec"]["replicatedJobs"] == jobset["spec"]["replicatedJobs"]
    assert JOBSET.plan_stop(stopped, workload) == []


def test_an_admission_for_other_pod_sets_cannot_start_it() -> None:
    from integrations.framework.pod_set_info import InvalidPodSetInfo

    jobset = stored_jobset()
    workload = admitted(build_workload(JOBSET, jobset, PriorityClasses()))
    workload.status.admission.pod_set_assignments.pop()  # type: ignore[union-attr]
    with pytest.raises(InvalidPodSetInfo):
        JOBSET.start(jobset, workload, {"gpu": FLAVOR})


def test_a_running_jobset_matches_its_admitted_workload() -> None:
    jobset = stored_jobset()
    workload = admitted(build_workload(JOBSET, jobset, PriorityClasses()))
    running = JOBSET.start(jobset, workload, {"gpu": FLAVOR})
    match = match_workloads(JOBSET, running, [workload], {"gpu": FLAVOR})
    assert match.match is workload and not match.stop_job


def _with_status(jobset: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(jobset)
    out["status"] = status
    return out


def test_finished_from_completed_or_failed_as_failure_policy_decides() -> None:
    jobset = stored_jobset()
    assert JOBSET.finished(jobset) is None
    done = _with_status(
        jobset, {"conditions": [{"type": "Completed", "status": "True", "message": "ok"}]}
    )
    failed = _with_status(
        jobset,
        {"conditions": [{"type": "Failed", "status": "True", "message": "restarts exceeded"}]},
    )
    assert JOBSET.finished(done).reason is WorkloadReason.SUCCEEDED  # type: ignore[union-attr]
    finish = JOBSET.finished(failed)
    assert finish is not None and finish.reason is WorkloadReason.FAILED
    assert finish.message == "restarts exceeded"


def test_active_ready_and_reclaimable_from_replicated_job_status() -> None:
    jobset = _with_status(
        stored_jobset(),
        {
            "replicatedJobsStatus": [
                {"name": "driver", "ready": 1, "active": 1},
                {"name": "workers", "ready": 2, "succeeded": 2, "active": 2},
            ]
        },
    )
    assert JOBSET.is_active(jobset)
    assert JOBSET.pods_ready(jobset)
    assert [(r.name, r.count) for r in JOBSET.reclaimable_pods(jobset)] == [("workers", 2)]
    quiet = _with_status(stored_jobset(), {"replicatedJobsStatus": [{"name": "workers"}]})
    assert not JOBSET.is_active(quiet) and not JOBSET.pods_ready(quiet)


def test_defaulting_suspends_a_queued_jobset_and_hands_it_to_multikueue() -> None:
    jobset = stored_jobset()
    jobset["spec"]["suspend"] = False
    ctx = WebhookContext(leads_to_multikueue=lambda queue: queue == "team")
    defaulted = JOBSET.default(jobset, ctx)
    assert defaulted["spec"]["suspend"] is True
    assert defaulted["spec"]["managedBy"] == MULTIKUEUE
    own = copy.deepcopy(jobset)
    own["spec"]["managedBy"] = "someone.else/controller"
    assert JOBSET.default(own, ctx)["spec"]["managedBy"] == "someone.else/controller"


def test_validation_rejects_a_bad_queue_name_and_a_queue_change_while_running() -> None:
    bad = stored_jobset()
    bad["metadata"]["labels"][QUEUE] = "Not_A_Name"
    assert JOBSET.validate_create(bad, WebhookContext())
    old = stored_jobset()
    old["spec"]["suspend"] = False
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE] = "other"
    errors = JOBSET.validate_update(old, new, WebhookContext())
    assert any("queue-name" in str(e) for e in errors)


def test_the_remote_copy_is_the_jobset_for_the_worker_and_its_status_comes_back() -> None:
    local = stored_jobset()
    local["spec"]["managedBy"] = MULTIKUEUE
    remote = JOBSET.remote_job(local, workload_name="jobset-train-abc", origin="hub-a")
    assert remote["kind"] == "JobSet" and "managedBy" not in remote["spec"]
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "jobset-train-abc"
    assert labels["kueue.x-k8s.io/multikueue-origin"] == "hub-a"
    assert "uid" not in remote["metadata"] and "resourceVersion" not in remote["metadata"]
    ran = _with_status(remote, {"replicatedJobsStatus": [{"name": "workers", "active": 4}]})
    sync = JOBSET.remote_status_sync(local, ran)
    assert sync.decision is StatusSyncDecision.COPY and sync.status == ran["status"]
    mine = copy.deepcopy(local)
    mine["spec"]["managedBy"] = None
    assert JOBSET.remote_status_sync(mine, ran).decision is StatusSyncDecision.NOT_MANAGED
