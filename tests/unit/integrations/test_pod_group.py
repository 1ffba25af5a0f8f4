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


def _started(pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Workload]:
    job = group(*pods)
    workload = admitted(POD.composed_workload(build_workload(POD, job, PriorityClasses()), job))
    return _running(POD.members_of(POD.start(job, workload, {"gpu": FLAVOR}))), workload


def test_a_failed_pod_is_absent_until_replaced_and_the_replacement_joins_the_admission() -> None:
    running, workload = _started([member(n) for n in "abcd"])
    running[1]["status"]["phase"] = "Failed"
    failed = POD.match_composed(group(*running), workload)
    assert failed.equivalent and failed.absent == 1, "the Workload waits for a replacement"
    assert [p["metadata"]["name"] for p in failed.kept] == ["a", "c", "d", "b"]
    assert failed.released == () and failed.excess == (), "b keeps its finalizer meanwhile"
    assert POD.finished(group(*running)) is None, "a retriable group goes on"

    replacement = member("b2", created="2026-01-01T00:01:00Z")
    joined = POD.match_composed(group(*running, replacement), workload)
    assert joined.equivalent and joined.absent == 0
    assert [p["metadata"]["name"] for p in joined.released] == ["b"], "b's finalizer comes off"
    assert [o.name for o in joined.new_owners] == ["b2"], "the replacement owns the Workload too"
    assert not any(o.controller for o in joined.new_owners)
    kept = pod_group.compose("team-a", "train", joined.kept)
    started = POD.start(kept, workload, {"gpu": FLAVOR})
    new = next(p for p in POD.members_of(started) if p["metadata"]["name"] == "b2")
    assert "schedulingGates" not in new["spec"], "ungated into the same admission"


def test_pods_beyond_a_pod_sets_count_are_excess_newest_gated_first() -> None:
    running, workload = _started([member(n) for n in "abcd"])
    extra = member("e", created="2026-01-01T00:02:00Z")
    found = POD.match_composed(group(*running, extra), workload)
    assert [p["metadata"]["name"] for p in found.excess] == ["e"]
    assert len(found.kept) == 4 and found.absent == 0


def test_a_workload_is_built_from_runnable_pods_and_failed_ones_are_released_first() -> None:
    pods = [member(n) for n in "abcd"]
    pods[0]["status"] = {"phase": "Failed"}
    found = POD.match_composed(group(*pods), None)
    assert not found.equivalent, "3 runnable of 4: no Workload yet"
    assert [p["metadata"]["name"] for p in found.released] == ["a"]
    with pytest.raises(IncompleteJob):
        POD.pod_sets(group(*pods))
    five = [*pods[1:], member("e"), member("f", created="2026-01-01T00:03:00Z")]
    found = POD.match_composed(group(*five), None)
    assert found.equivalent and [p["metadata"]["name"] for p in found.excess] == ["f"]


def test_fast_admission_counts_a_role_absent_only_without_any_pod() -> None:
    first = member("a")
    first["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-fast-admission"] = "true"
    job = group(first)
    workload = admitted(POD.composed_workload(build_workload(POD, job, PriorityClasses()), job))
    assert [p.count for p in workload.spec.pod_sets] == [4]
    found = POD.match_composed(job, workload)
    assert found.equivalent and found.absent == 0
    first["status"] = {"phase": "Failed"}
    assert POD.match_composed(group(first), workload).absent == 1


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


def test_stop_marks_every_started_member_and_a_group_is_never_deleted_whole() -> None:
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
    assert "deletionTimestamp" not in group(*deleting)["metadata"], "its Workload outlives it"
    assert not POD.is_active(group(*deleting))


def test_members_naming_different_queues_or_counts_make_no_workload() -> None:
    pods = [member(n) for n in "abcd"]
    pods[2]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    found = POD.match_composed(group(*pods), None)
    assert not found.equivalent
    assert (
        found.problem == "Pods 'a' and 'c' of the group have different queue names: team != other"
    )
    pods = [member(n) for n in "abcd"]
    pods[3]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "5"
    assert "different total counts: 4 != 5" in str(POD.match_composed(group(*pods), None).problem)
    pods[3]["status"] = {"phase": "Failed"}
    pods.append(member("e"))
    assert POD.match_composed(group(*pods), None).problem is None, "failed Pods are not asked"


def test_a_deleted_member_counts_until_its_kubelet_stops_it_and_waits_for_a_replacement() -> None:
    running, workload = _started([member(n) for n in "abcd"])
    for pod in running:
        pod["spec"]["nodeName"] = "node-1"
    running[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    still = POD.match_composed(group(*running), workload)
    assert still.absent == 0, "placed on a node and not stopped yet: it still counts"
    running[0]["status"]["phase"] = "Failed"
    stopped = POD.match_composed(group(*running), workload)
    assert stopped.absent == 1 and stopped.released == (), "kept, finalizer held, till replaced"
    replaced = POD.match_composed(group(*running, member("a2")), workload)
    assert [p["metadata"]["name"] for p in replaced.released] == ["a"]


def test_a_gated_member_deleted_before_admission_is_absent_at_once() -> None:
    pods = [member(n) for n in "abcd"]
    job = group(*pods)
    workload = POD.composed_workload(build_workload(POD, job, PriorityClasses()), job)
    pods[3]["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    assert POD.match_composed(group(*pods), workload).absent == 1
