"""MultiKueue for Jobs: the worker's copy, and when the worker's status comes back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from integrations.batch_job import job_fields
from integrations.batch_job.multikueue_adapter import remote_job, remote_status_sync
from integrations.framework.job_kind import StatusSyncDecision
from integrations.framework.job_metadata import (
    prebuilt_workload_name as workload_name_of_remote_job,
)
from integrations.framework.multikueue_copy import managed_by_multikueue as managed_by_value


def managed_by_multikueue(job: dict[str, object]) -> tuple[bool, str]:
    return managed_by_value(job_fields.managed_by(job))


MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def manager_job(stored_job: dict[str, Any], *, suspend: bool = True) -> dict[str, Any]:
    local = copy.deepcopy(stored_job)
    local["spec"]["managedBy"] = MULTIKUEUE
    local["spec"]["suspend"] = suspend
    return local


def test_remote_copy_keeps_identity_and_spec_drops_what_the_manager_generated(
    stored_job: dict[str, Any],
) -> None:
    local = manager_job(stored_job)
    remote = remote_job(local, workload_name="job-sample-job-1a2b3", origin="hub-eu")

    assert remote["apiVersion"] == "batch/v1" and remote["kind"] == "Job"
    assert remote["metadata"] == {
        "name": "sample-job",
        "namespace": "team-a",
        "labels": {
            "kueue.x-k8s.io/queue-name": "user-queue",
            "app": "trainer",
            "kueue.x-k8s.io/prebuilt-workload-name": "job-sample-job-1a2b3",
            "kueue.x-k8s.io/multikueue-origin": "hub-eu",
        },
        "annotations": local["metadata"]["annotations"],
    }
    assert "uid" not in remote["metadata"] and "resourceVersion" not in remote["metadata"]
    assert "status" not in remote
    assert "selector" not in remote["spec"]
    assert "managedBy" not in remote["spec"], "the worker's Job controller runs it"
    assert remote["spec"]["suspend"] is True
    assert remote["spec"]["template"]["metadata"]["labels"] == {
        "app": "trainer",
        "batch.kubernetes.io/job-name": "sample-job",
    }
    assert remote["spec"]["template"]["spec"] == local["spec"]["template"]["spec"]
    assert local["spec"]["managedBy"] == MULTIKUEUE, "the manager's Job is not modified"
    assert workload_name_of_remote_job(remote) == "job-sample-job-1a2b3"


def test_a_job_without_labels_or_annotations_still_gets_ours(stored_job: dict[str, Any]) -> None:
    local = manager_job(stored_job)
    del local["metadata"]["labels"], local["metadata"]["annotations"]
    remote = remote_job(local, workload_name="wl", origin="multikueue")
    assert remote["metadata"]["labels"] == {
        "kueue.x-k8s.io/prebuilt-workload-name": "wl",
        "kueue.x-k8s.io/multikueue-origin": "multikueue",
    }
    assert "annotations" not in remote["metadata"]


@pytest.mark.parametrize(
    ("managed_by", "ok", "reason"),
    [
        (MULTIKUEUE, True, ""),
        (None, False, 'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""'),
        (
            "kubernetes.io/job-controller",
            False,
            'Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not'
            ' "kubernetes.io/job-controller"',
        ),
    ],
)
def test_only_jobs_managed_by_multikueue_are_dispatched(
    stored_job: dict[str, Any], managed_by: str | None, ok: bool, reason: str
) -> None:
    if managed_by is not None:
        stored_job["spec"]["managedBy"] = managed_by
    assert managed_by_multikueue(stored_job) == (ok, reason)


REMOTE_STATUS = {
    "startTime": "2025-03-01T10:07:00Z",
    "active": 2,
    "ready": 2,
    "succeeded": 1,
    "uncountedTerminatedPods": {},
}


@pytest.mark.parametrize(
    ("managed", "suspend", "local_active", "decision"),
    [
        (True, False, 0, StatusSyncDecision.COPY),
        (True, True, 0, StatusSyncDecision.LOCAL_SUSPENDED),
        (True, True, 1, StatusSyncDecision.LOCAL_SUSPENDED),
        (False, False, 0, StatusSyncDecision.NOT_MANAGED),
    ],
    ids=[
        "unsuspended manager Job gets the worker's status",
        "suspended manager Job waits",
        "suspended with a copied active count (stopped on the manager): no copy",
        "a Job not managed by MultiKueue is never overwritten",
    ],
)
def test_remote_status_is_copied_only_onto_a_multikueue_job(
    stored_job: dict[str, Any],
    managed: bool,
    suspend: bool,
    local_active: int,
    decision: StatusSyncDecision,
) -> None:
    local = manager_job(stored_job, suspend=suspend)
    if not managed:
        del local["spec"]["managedBy"]
    local["status"] = {"active": local_active} if local_active else {}
    remote = {"spec": {}, "status": REMOTE_STATUS}
    sync = remote_status_sync(local, remote)
    assert sync.decision is decision
    if decision is StatusSyncDecision.COPY:
        assert sync.status == REMOTE_STATUS
        assert sync.status is not REMOTE_STATUS
    else:
        assert sync.status is None


def test_an_identical_status_needs_no_write(stored_job: dict[str, Any]) -> None:
    local = manager_job(stored_job, suspend=False)
    local["status"] = copy.deepcopy(REMOTE_STATUS)
    sync = remote_status_sync(local, {"status": REMOTE_STATUS})
    assert sync.decision is StatusSyncDecision.IN_SYNC
    assert sync.status is None
