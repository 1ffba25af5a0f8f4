"""The StatefulSet kind: one prebuilt group Workload per StatefulSet (upstream v0.19.2)."""

from __future__ import annotations

import copy
from typing import Any

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION
from integrations.framework import job_capabilities as capabilities
from integrations.framework.group_workloads import GroupWorkloadName, prebuilds_group_workloads
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.pod import pod_group
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from integrations.statefulset.kind import STATEFULSET
from tests.builders import Pod, StatefulSet

QUEUE = "kueue.x-k8s.io/queue-name"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
UID = "6f1c1d7e-2d0b-4a7e-9a51-0c1e8b0f3a11"

UPSTREAM_NAMES = {
    ("sts", UID): "statefulset-sts-cb58f",
    (
        "low-priority",
        "0b8a9a52-3b7c-4f0e-8d1e-2f4a6c8e0d22",
    ): "statefulset-low-priority-bafe7",
    ("web", ""): "statefulset-web-ac922",
}
"""What upstream v0.19.2's own `statefulset.GetWorkloadName(uid, name)` returns for these
pairs (run from the module cache; the empty UID is its legacy name). The conformance
suite looks the Workload up by that function, e.g. `statefulset-sts-0ecc5`."""


def queued(replicas: int = 3, *, name: str = "web", uid: str = UID) -> dict[str, Any]:
    sts = StatefulSet(name, "team-a", replicas=replicas).uid(uid).queue("team")
    return STATEFULSET.default(sts.requests({"cpu": "1"}).obj(), WebhookContext())


def pod_of(statefulset: dict[str, Any], index: int) -> dict[str, Any]:
    """A Pod of the set as the StatefulSet controller and the Pod webhook leave it."""
    template = copy.deepcopy(statefulset["spec"]["template"])
    pod = Pod.from_obj({"apiVersion": "v1", "kind": "Pod", **template}).obj()
    name = statefulset["metadata"]["name"]
    pod["metadata"].update(name=f"{name}-{index}", namespace="team-a", uid=f"u{index}")
    pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = str(index)
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": name,
            "uid": UID,
            "controller": True,
        }
    ]
    return POD.default(pod, WebhookContext())


def with_replicas(statefulset: dict[str, Any], count: int) -> dict[str, Any]:
    return {**statefulset, "spec": {**statefulset["spec"], "replicas": count}}


def test_a_queued_statefulset_marks_its_template_for_the_pod_webhook_only() -> None:
    meta = queued()["spec"]["template"]["metadata"]
    assert meta["labels"][QUEUE] == "team"
    assert meta["annotations"] == {PARENT: "statefulset"}
    assert "kueue.x-k8s.io/pod-group-name" not in meta["labels"], "set on each Pod instead"


def test_its_workload_is_named_as_upstream_names_it() -> None:
    for (name, uid), expected in UPSTREAM_NAMES.items():
        (wanted,) = STATEFULSET.wanted_group_workloads(queued(name=name, uid=uid))
        assert wanted.name == expected


def test_one_group_for_all_replicas_held_at_zero_and_none_unqueued() -> None:
    job = queued(3, name="sts")
    assert STATEFULSET.wanted_group_workloads(job) == [
        GroupWorkloadName(UPSTREAM_NAMES[("sts", UID)], 0)
    ]
    (held,) = STATEFULSET.wanted_group_workloads(with_replicas(job, 0))
    assert held.held and held.name == UPSTREAM_NAMES[("sts", UID)]
    assert STATEFULSET.wanted_group_workloads(StatefulSet("db", "team-a").obj()) == []


def test_a_multikueue_copy_is_named_after_the_origin_and_creates_nothing() -> None:
    copy_ = queued(name="sts", uid="worker-copy-uid")
    copy_["metadata"]["labels"][MULTIKUEUE_ORIGIN_LABEL] = "hub"
    copy_["metadata"].setdefault("annotations", {})[MULTIKUEUE_ORIGIN_UID_ANNOTATION] = UID
    (wanted,) = STATEFULSET.wanted_group_workloads(copy_)
    assert wanted.name == UPSTREAM_NAMES[("sts", UID)]
    assert not STATEFULSET.creates_group_workloads(copy_)
    assert STATEFULSET.creates_group_workloads(queued())


def test_the_workload_is_one_main_pod_set_of_all_replicas_marked_as_the_groups() -> None:
    job = queued(3)
    (wanted,) = STATEFULSET.wanted_group_workloads(job)
    workload = STATEFULSET.group_workload(
        build_workload(STATEFULSET, job, PriorityClasses()), job, wanted
    )
    assert workload.metadata.name == wanted.name
    assert workload.metadata.labels["kueue.x-k8s.io/job-uid"] == UID
    assert workload.metadata.annotations["kueue.x-k8s.io/is-group-workload"] == "true"
    assert workload.metadata.annotations["kueue.x-k8s.io/job-owner-gvk"] == (
        "apps/v1, Kind=StatefulSet"
    )
    assert workload.metadata.annotations["kueue.x-k8s.io/job-owner-name"] == "web"
    (pod_set,) = workload.spec.pod_sets
    assert (pod_set.name, pod_set.count) == ("main", 3)
    assert pod_set.template["metadata"] == {}, "only the spec, as a Go client writes it back"


def test_pods_are_marked_members_of_the_group_once_and_gated_ones_follow_the_queue() -> None:
    job = queued(3)
    (wanted,) = STATEFULSET.wanted_group_workloads(job)
    pod = STATEFULSET.marked_pod(job, pod_of(job, 1))
    assert pod is not None
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["kueue.x-k8s.io/managed"] == "true"
    assert labels["kueue.x-k8s.io/pod-group-name"] == wanted.name
    assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == wanted.name
    assert annotations["kueue.x-k8s.io/pod-group-total-count"] == "3"
    assert annotations["kueue.x-k8s.io/pod-group-serving"] == "true"
    assert annotations["kueue.x-k8s.io/pod-group-pod-index-label"] == (
        "apps.kubernetes.io/pod-index"
    )
    assert annotations["kueue.x-k8s.io/role-hash"] == "main"
    assert STATEFULSET.marked_pod(job, pod) is None, "marked once"
    moved = copy.deepcopy(job)
    moved["metadata"]["labels"][QUEUE] = "other"
    followed = STATEFULSET.marked_pod(moved, pod)
    assert followed is not None and followed["metadata"]["labels"][QUEUE] == "other"
    pod["spec"]["schedulingGates"] = []
    assert STATEFULSET.marked_pod(moved, pod) is None, "a started Pod keeps its queue"
    assert STATEFULSET.pod_job_name(pod) == "web"
    assert STATEFULSET.pod_job_name({"metadata": {"name": "lone"}}) is None


def test_the_pod_integration_takes_the_prebuilt_workload_for_the_group() -> None:
    job = queued(3)
    (wanted,) = STATEFULSET.wanted_group_workloads(job)
    workload = STATEFULSET.group_workload(
        build_workload(STATEFULSET, job, PriorityClasses()), job, wanted
    )
    pods = [STATEFULSET.marked_pod(job, pod_of(job, i)) for i in range(2)]
    group = pod_group.compose("team-a", wanted.name, [p for p in pods if p is not None])
    assert POD.prebuilt_workload_matches(group, workload), "2 of 3 Pods arrived: still its"
    workload.spec.pod_sets[0].count = 1
    assert not POD.prebuilt_workload_matches(group, workload), "more Pods than it holds"


def test_replicas_change_only_to_and_from_zero_once_the_scale_down_is_over() -> None:
    ctx = WebhookContext()
    old = queued(3)
    to_zero = with_replicas(old, 0)
    assert STATEFULSET.validate_update(old, to_zero, ctx) == []
    assert STATEFULSET.validate_update(old, with_replicas(old, 5), ctx)
    assert STATEFULSET.validate_update(to_zero, with_replicas(to_zero, 5), ctx) == []
    still_scaling = {**with_replicas(to_zero, 3), "status": {"replicas": 2}}
    assert "scaling down is still in progress" in str(
        STATEFULSET.validate_update(to_zero, still_scaling, ctx)
    )


def test_the_queue_changes_only_while_no_replica_is_ready_and_the_shape_is_fixed() -> None:
    ctx = WebhookContext()
    old = queued(3)
    moved = copy.deepcopy(old)
    moved["metadata"]["labels"][QUEUE] = "other"
    assert STATEFULSET.validate_update(old, moved, ctx) == []
    ready = {**old, "status": {"readyReplicas": 1}}
    assert STATEFULSET.validate_update(ready, moved, ctx)
    new_image = copy.deepcopy(old)
    new_image["spec"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    assert STATEFULSET.validate_update(ready, {**new_image, "status": ready["status"]}, ctx) == []
    bigger = copy.deepcopy(old)
    bigger["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    assert STATEFULSET.validate_update(old, bigger, ctx)


def test_other_statefulsets_are_left_alone_and_statefulset_enables_pods() -> None:
    plain = StatefulSet("db", "team-a").obj()
    assert STATEFULSET.default(plain, WebhookContext()) == plain
    assert STATEFULSET.validate_update(plain, with_replicas(plain, 4), WebhookContext()) == []
    assert prebuilds_group_workloads(STATEFULSET) is STATEFULSET
    assert not capabilities.is_webhook_only(STATEFULSET)
    assert STATEFULSET in capabilities.dispatchable(REGISTRY)
    assert REGISTRY.enabled(["statefulset"]).names == ("pod", "statefulset")
