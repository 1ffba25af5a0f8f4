"""Pod groups as one composed job: completeness, pod sets by role, all-at-once start,
failed Pods kept in place until replaced, finishing, and the group Workload."""

from __future__ import annotations

from typing import Any

import pytest

from core.api.codec import decode
from core.api.meta import Condition, ConditionStatus
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.manager.job_controller import COMPOSED_KEY_SUFFIX, job_key
from integrations.framework.job_capabilities import IncompleteJob, composed
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.pod import pod_group
from integrations.pod.kind import POD
from tests.builders import Pod

GATE = "kueue.x-k8s.io/admission"
FLAVOR = decode(
    ResourceFlavor, {"metadata": {"name": "gpu"}, "spec": {"nodeLabels": {"pool": "gpu"}}}
)


def member(
    name: str, *, gpus: int = 1, total: int = 4, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    """A group member as the webhook leaves it (gated, managed, role hash recorded); its
    GPUs are requests, as the apiserver defaults them from limits before webhooks run."""
    pod = (
        Pod(name, "team-a")
        .uid(f"uid-{name}")
        .resource_version("1")
        .creation_timestamp(created)
        .queue("team")
        .group("train", total)
        .requests({"cpu": "1", "nvidia.com/gpu": str(gpus)})
        .obj()
    )
    return POD.default(pod, WebhookContext())


def group(*pods: dict[str, Any]) -> dict[str, Any]:
    return pod_group.compose("team-a", "train", pods)


def admitted(workload: Workload) -> Workload:
    workload.status.conditions = [
        Condition(
            type=kind,
            status=ConditionStatus.TRUE,
            reason=kind,
            message="",
            last_transition_time="2026-01-01T00:00:00Z",
        )
        for kind in ("QuotaReserved", "Admitted")
    ]
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


def test_grouped_pods_are_reconciled_under_their_groups_key() -> None:
    assert composed(POD) is POD
    assert job_key(POD, member("a")) == "team-a/train" + COMPOSED_KEY_SUFFIX
    assert job_key(POD, Pod("solo", "team-a").obj()) == "team-a/solo"


def test_no_workload_until_the_group_is_complete() -> None:
    with pytest.raises(IncompleteJob):
        POD.pod_sets(group(member("a"), member("b"), member("c")))
    four = group(*(member(n) for n in "abcd"))
    assert [(p.count) for p in POD.pod_sets(four)] == [4]


def test_pod_sets_by_role_sorted_by_role_hash() -> None:
    pods = [member("a", gpus=2), member("b"), member("c"), member("d", gpus=2)]
    sets = POD.pod_sets(group(*pods))
    assert sorted(p.count for p in sets) == [2, 2]
    assert [p.name for p in sets] == sorted(p.name for p in sets)
    roles = {pod["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] for pod in pods}
    assert {p.name for p in sets} == roles


def test_fast_admission_needs_one_pod_and_asks_for_the_total() -> None:
    first = member("a")
    first["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] = "true"
    (only,) = POD.pod_sets(group(first))
    assert only.count == 4


def test_the_group_workload_is_named_after_the_group_and_owned_by_every_pod() -> None:
    job = group(*(member(n) for n in "abcd"))
    workload = POD.composed_workload(build_workload(POD, job, PriorityClasses()), job)
    assert workload.metadata.name == "train"
    assert workload.metadata.annotations["kueue.x-k8s.io/is-group-workload"] == "true"
    assert [o.name for o in workload.metadata.owner_references] == list("abcd")
    assert [o.controller for o in workload.metadata.owner_references] == [True, False, False, False]
    assert workload.spec.queue_name == "team"
    as_json = {
        "metadata": {"name": "train", "annotations": {"kueue.x-k8s.io/is-group-workload": "true"}}
    }
    assert POD.composed_name_of_workload(as_json) == "train"


def test_admission_ungates_every_member_at_once() -> None:
    job = group(*(member(n) for n in "abcd"))
    workload = admitted(POD.composed_workload(build_workload(POD, job, PriorityClasses()), job))
    started = POD.start(job, workload, {"gpu": FLAVOR})
    pods = POD.members_of(started)
    assert len(pods) == 4
    assert all("schedulingGates" not in p["spec"] for p in pods)
    assert all(p["spec"]["nodeSelector"] == {"pool": "gpu"} for p in pods)
    assert not POD.is_suspended(started)


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for pod in pods:
        pod["status"] = {"phase": "Running"}
    return pods


def test_a_failed_pod_keeps_its_place_until_replaced_and_the_replacement_starts_at_once() -> None:
    job = group(*(member(n) for n in "abcd"))
    workload = admitted(POD.composed_workload(build_workload(POD, job, PriorityClasses()), job))
    running = _running(POD.members_of(POD.start(job, workload, {"gpu": FLAVOR})))
    running[1]["status"]["phase"] = "Failed"
    failed_group = group(*running)
    assert POD.finished(failed_group) is None, "a retriable group goes on"
    match = match_workloads(POD, failed_group, [workload], {"gpu": FLAVOR}, check_owner=False)
    assert match.match is workload, "the failed Pod still counts"
    replacement = member("b2", created="2026-01-01T00:01:00Z")
    with_replacement = group(*running, replacement)
    assert [p.count for p in POD.pod_sets(with_replacement)] == [4]
    assert (
        match_workloads(POD, with_replacement, [workload], {"gpu": FLAVOR}, check_owner=False).match
        is workload
    )
    started = POD.start(with_replacement, workload, {"gpu": FLAVOR})
    new = next(p for p in POD.members_of(started) if p["metadata"]["name"] == "b2")
    assert "schedulingGates" not in new["spec"]


def test_finished_when_the_total_succeeded_or_an_unretriable_group_stops() -> None:
    pods = _running([member(n) for n in "abcd"])
    for pod in pods:
        pod["status"]["phase"] = "Succeeded"
    done = POD.finished(group(*pods))
    assert done is not None and done.message == "Pods succeeded: 4/4."
    unretriable = _running([member(n) for n in "abcd"])
    unretriable[0]["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"] = "false"
    for pod in unretriable:
        pod["status"]["phase"] = "Failed"
    assert POD.finished(group(*unretriable)) is not None
    serving = _running([member(n) for n in "abcd"])
    serving[0]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] = "true"
    for pod in serving:
        pod["status"]["phase"] = "Succeeded"
    assert POD.finished(group(*serving)) is None


def test_stop_marks_every_started_member_and_an_all_deleted_group_is_deleting() -> None:
    job = group(*(member(n) for n in "abcd"))
    assert POD.plan_stop(job, None) == [], "gated members need no stop"
    workload = admitted(POD.composed_workload(build_workload(POD, job, PriorityClasses()), job))
    running = group(*_running(POD.members_of(POD.start(job, workload, {"gpu": FLAVOR}))))
    (write,) = POD.plan_stop(running, workload)
    marked = POD.members_of(write.job)
    assert all(p["status"]["conditions"][-1]["type"] == "TerminationTarget" for p in marked)
    assert POD.is_active(running)
    deleting = POD.members_of(running)
    for pod in deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    assert group(*deleting)["metadata"]["deletionTimestamp"] == "2026-01-01T00:05:00Z"
    assert not POD.is_active(group(*deleting))
