"""The copy a worker gets, and when a copy counts as drifted."""

from __future__ import annotations

from hub.multikueue.dispatch.remote_copy import (
    SPEC_ANNOTATION,
    SpecDrift,
    is_ours,
    priority_patch,
    remote_workload,
    spec_drift,
    spec_fingerprint,
)

from .builders import ORIGIN, local_workload, remote_copy


def test_the_copy_has_our_origin_label_and_no_owner_or_status() -> None:
    local = local_workload()
    local["metadata"]["annotations"] = {"team": "a"}
    copy = remote_workload(local, ORIGIN)
    assert copy["metadata"] == {
        "name": "job-a-1234",
        "namespace": "ns",
        "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/multikueue-origin": ORIGIN},
        "annotations": {"team": "a", SPEC_ANNOTATION: spec_fingerprint(local)},
    }
    assert "status" not in copy and copy["spec"] == local["spec"]
    assert is_ours(copy, ORIGIN) and not is_ours(copy, "another-hub")
    assert not is_ours(local, ORIGIN)


def test_the_copy_drops_the_managers_job_uid_label() -> None:
    """A worker running upstream v0.19 would finish such an ownerless copy as orphaned."""
    local = local_workload()
    local["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] = "0f6c-manager-job-uid"
    copy = remote_workload(local, ORIGIN)
    assert "kueue.x-k8s.io/job-uid" not in copy["metadata"]["labels"]
    assert local["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == "0f6c-manager-job-uid"


def test_defaults_one_apiserver_filled_in_are_not_drift() -> None:
    local = local_workload()
    remote = remote_copy(local)
    remote["spec"] = dict(remote["spec"], active=True, priorityClassRef=None, preemptionGates=[])
    assert spec_drift(local, remote) is SpecDrift.IN_SYNC


def test_priority_only_drift_is_patched_anything_else_replaces() -> None:
    local = local_workload(priority=10)
    remote = remote_copy(local)
    remote["spec"] = dict(remote["spec"], priority=5)
    assert spec_drift(local, remote) is SpecDrift.PRIORITY
    assert priority_patch(local) == {"spec": {"priorityClassRef": None, "priority": 10}}
    remote["spec"] = dict(remote["spec"], queueName="another")
    assert spec_drift(local, remote) is SpecDrift.OTHER


def test_deactivating_the_manager_workload_is_not_drift() -> None:
    """Deactivation reaches the copy through the eviction (DeactivationTarget), not a swap."""
    local = local_workload(priority=10)
    remote = remote_copy(local)
    local["spec"] = dict(local["spec"], active=False)
    assert spec_drift(local, remote) is SpecDrift.IN_SYNC


def test_a_worker_defaulting_its_copy_differently_is_not_drift() -> None:
    local = local_workload(priority=1)
    copy = remote_workload(local, ORIGIN)
    container = copy["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": 80, "protocol": "TCP"}]  # the worker's schema
    copy["spec"]["podSets"][0]["template"]["spec"]["restartPolicy"] = "Never"
    assert spec_drift(local, copy) is SpecDrift.IN_SYNC

    local["spec"]["priority"] = 2
    assert spec_drift(local, copy) is SpecDrift.PRIORITY
    local["spec"]["podSets"][0]["count"] = 3
    assert spec_drift(local, copy) is SpecDrift.OTHER
