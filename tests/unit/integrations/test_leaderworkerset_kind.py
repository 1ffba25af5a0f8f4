"""The LeaderWorkerSet kind: marked templates, one prebuilt Workload per group, group
marks on its Pods, and the Pod integration accepting those Workloads for the groups."""

from __future__ import annotations

import copy
from typing import Any

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION
from integrations.framework import job_capabilities as capabilities
from integrations.framework.group_workloads import prebuilds_group_workloads
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_names import workload_name_for_owner
from integrations.leaderworkerset.kind import LEADERWORKERSET
from integrations.pod import pod_group
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from integrations.statefulset.kind import STATEFULSET
from tests.builders import LeaderWorkerSet, Pod, StatefulSet

QUEUE = "kueue.x-k8s.io/queue-name"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
SERVING = "kueue.x-k8s.io/pod-group-serving"


def lws(
    *, replicas: int = 2, size: int = 3, leader: bool = True, queue: str | None = "team"
) -> dict[str, Any]:
    builder = LeaderWorkerSet("serve", "team-a", replicas=replicas, size=size)
    builder = builder.uid("lws-uid").requests({"cpu": "1"})
    if queue:
        builder = builder.queue(queue)
    if leader:
        builder = builder.leader()
    return builder.obj()


def queued(**options: Any) -> dict[str, Any]:
    return LEADERWORKERSET.default(lws(**options), WebhookContext())


def pod_of(queued_lws: dict[str, Any], name: str, index: int | None, *, worker: bool) -> Any:
    """A Pod of the set as the LWS controller and the Pod webhook leave it."""
    template_key = "workerTemplate" if worker else "leaderTemplate"
    template = copy.deepcopy(queued_lws["spec"]["leaderWorkerTemplate"][template_key])
    pod = Pod.from_obj({"apiVersion": "v1", "kind": "Pod", **template}).obj()
    pod["metadata"].update(name=name, namespace="team-a", uid=f"uid-{name}")
    pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/name"] = "serve"
    if index is not None:
        pod["metadata"]["labels"][GROUP_INDEX] = str(index)
    if worker:
        pod["metadata"].setdefault("annotations", {})["leaderworkerset.sigs.k8s.io/leader-name"] = (
            "serve-0"
        )
    return POD.default(pod, WebhookContext())


def test_a_queued_lws_marks_both_templates_so_the_pod_webhook_gates_every_pod() -> None:
    template = queued()["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        meta = template[key]["metadata"]
        assert meta["labels"][QUEUE] == "team"
        assert "kueue.x-k8s.io/managed" not in meta["labels"], "the controller marks Pods"
        assert meta["annotations"] == {
            PARENT: FRAMEWORK,
            "kueue.x-k8s.io/pod-group-serving": "true",
        }
    leader = pod_of(queued(), "serve-0", 0, worker=False)
    assert leader["spec"]["schedulingGates"] == [
        {"name": "kueue.x-k8s.io/admission"},
        {"name": "kueue.x-k8s.io/topology"},
    ]
    assert "finalizers" not in leader["metadata"], "a parent's Pod gets no Pod finalizer"


def test_an_lws_without_a_queue_is_left_alone_unless_a_default_queue_exists() -> None:
    plain = lws(queue=None)
    assert LEADERWORKERSET.default(plain, WebhookContext()) == plain
    assert LEADERWORKERSET.wanted_group_workloads(plain) == []
    defaulted = LEADERWORKERSET.default(plain, WebhookContext(default_local_queue_exists=True))
    assert defaulted["metadata"]["labels"][QUEUE] == "default"
    assert LEADERWORKERSET.wanted_group_workloads(defaulted)


def test_each_group_is_a_leader_and_size_minus_one_workers_or_main_without_a_leader() -> None:
    pod_sets = LEADERWORKERSET.pod_sets(queued())
    assert [(p.name, p.count) for p in pod_sets] == [("leader", 1), ("worker", 2)]
    (main,) = LEADERWORKERSET.pod_sets(queued(leader=False, size=4))
    assert (main.name, main.count) == ("main", 4)
    assert main.topology_request is None or main.topology_request.pod_index_label == (
        "leaderworkerset.sigs.k8s.io/worker-index"
    )


def test_one_workload_per_replica_named_as_upstream_names_them() -> None:
    job = queued(replicas=3)
    wanted = LEADERWORKERSET.wanted_group_workloads(job)
    assert [w.index for w in wanted] == [0, 1, 2]
    assert wanted[1].name == workload_name_for_owner(
        owner_name="serve-1",
        owner_uid="lws-uid",
        owner_kind="LeaderWorkerSet",
        owner_group="leaderworkerset.x-k8s.io",
    )
    assert wanted[1].name.startswith("leaderworkerset-serve-1-")
    built = build_workload(LEADERWORKERSET, job, PriorityClasses())
    workload = LEADERWORKERSET.group_workload(built, job, wanted[1])
    assert workload.metadata.name == wanted[1].name
    assert workload.metadata.annotations["kueue.x-k8s.io/is-group-workload"] == "true"
    assert workload.metadata.annotations["kueue.x-k8s.io/component-workload-index"] == "1"
    assert workload.metadata.owner_references[0].kind == "LeaderWorkerSet"
    assert workload.spec.queue_name == "team"


def test_a_rolling_update_with_surge_keeps_the_surge_groups_wanted() -> None:
    job = queued(replicas=2)
    job["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 1}}
    job["status"] = {"replicas": 3, "updatedReplicas": 1}
    assert len(LEADERWORKERSET.wanted_group_workloads(job)) == 3
    job["status"]["updatedReplicas"] = 2  # rolled: the surge group goes
    assert len(LEADERWORKERSET.wanted_group_workloads(job)) == 2


def test_a_multikueue_copy_names_its_groups_after_the_origin_and_creates_none() -> None:
    job = queued()
    job["metadata"]["labels"][MULTIKUEUE_ORIGIN_LABEL] = "manager"
    job["metadata"]["annotations"] = {MULTIKUEUE_ORIGIN_UID_ANNOTATION: "origin-uid"}
    origin = queued()
    origin["metadata"]["uid"] = "origin-uid"
    assert LEADERWORKERSET.wanted_group_workloads(job) == (
        LEADERWORKERSET.wanted_group_workloads(origin)
    )
    assert not LEADERWORKERSET.creates_group_workloads(job)
    assert LEADERWORKERSET.creates_group_workloads(origin)


def test_indexed_pods_are_marked_members_of_their_groups_pod_group_once() -> None:
    job = queued()
    assert LEADERWORKERSET.marked_pod(job, pod_of(job, "serve-0", None, worker=False)) is None
    name = LEADERWORKERSET.wanted_group_workloads(job)[1].name
    leader = LEADERWORKERSET.marked_pod(job, pod_of(job, "serve-1", 1, worker=False))
    worker = LEADERWORKERSET.marked_pod(job, pod_of(job, "serve-1-1", 1, worker=True))
    assert leader is not None and worker is not None
    for pod, role in ((leader, "leader"), (worker, "worker")):
        labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        assert labels["kueue.x-k8s.io/managed"] == "true"
        assert labels["kueue.x-k8s.io/pod-group-name"] == name
        assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == name
        assert annotations["kueue.x-k8s.io/pod-group-total-count"] == "3"
        assert annotations["kueue.x-k8s.io/role-hash"] == role
    assert LEADERWORKERSET.marked_pod(job, leader) is None, "marked once"
    moved = copy.deepcopy(job)
    moved["metadata"]["labels"][QUEUE] = "other"
    followed = LEADERWORKERSET.marked_pod(moved, leader)
    assert followed is not None and followed["metadata"]["labels"][QUEUE] == "other"
    leader["spec"]["schedulingGates"] = []
    assert LEADERWORKERSET.marked_pod(moved, leader) is None, "a started Pod keeps its queue"


def test_the_pod_integration_takes_the_prebuilt_workload_for_the_group() -> None:
    job = queued()
    wanted = LEADERWORKERSET.wanted_group_workloads(job)[0]
    built = build_workload(LEADERWORKERSET, job, PriorityClasses())
    workload = LEADERWORKERSET.group_workload(built, job, wanted)
    pods = [
        LEADERWORKERSET.marked_pod(job, pod_of(job, "serve-0", 0, worker=False)),
        LEADERWORKERSET.marked_pod(job, pod_of(job, "serve-0-1", 0, worker=True)),
    ]
    group = pod_group.compose("team-a", wanted.name, [p for p in pods if p is not None])
    assert POD.composed_name_of_workload({"metadata": {"name": wanted.name, **_meta(workload)}})
    assert POD.prebuilt_workload_matches(group, workload), "2 of 3 Pods arrived: still its"
    workload.spec.pod_sets[1].count = 0
    assert not POD.prebuilt_workload_matches(group, workload), "more workers than it holds"
    other = LEADERWORKERSET.wanted_group_workloads(job)[1]
    assert not POD.prebuilt_workload_matches(
        group, LEADERWORKERSET.group_workload(built, job, other)
    )


def _meta(workload: Any) -> dict[str, Any]:
    return {"annotations": dict(workload.metadata.annotations)}


def test_while_queued_the_shape_and_size_are_fixed_but_images_and_replicas_may_change() -> None:
    ctx = WebhookContext()
    old = queued()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    new["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "v2"
    assert LEADERWORKERSET.validate_update(old, new, ctx) == []
    bigger = copy.deepcopy(old)
    bigger["spec"]["leaderWorkerTemplate"]["size"] = 4
    assert "size" in str(LEADERWORKERSET.validate_update(old, bigger, ctx))
    hungrier = copy.deepcopy(old)
    container = hungrier["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "2"
    errors = LEADERWORKERSET.validate_update(old, hungrier, ctx)
    assert "workerTemplate.spec.containers" in str(errors)
    no_leader = copy.deepcopy(old)
    del no_leader["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert "leaderTemplate" in str(LEADERWORKERSET.validate_update(old, no_leader, ctx))


def test_replicas_are_bounded_and_the_queue_is_fixed_while_a_replica_is_ready() -> None:
    ctx = WebhookContext()
    negative = queued()
    negative["spec"]["replicas"] = -1
    assert "must be >= 0" in str(LEADERWORKERSET.validate_create(negative, ctx))
    old = queued()
    moved = copy.deepcopy(old)
    moved["metadata"]["labels"][QUEUE] = "other"
    assert LEADERWORKERSET.validate_update(old, moved, ctx) == []
    old["status"] = {"readyReplicas": 1}
    assert "queue-name" in str(LEADERWORKERSET.validate_update(old, moved, ctx))


def test_lws_enables_pods_prebuilds_its_workloads_and_is_dispatched() -> None:
    assert REGISTRY.enabled([FRAMEWORK]).names == ("pod", FRAMEWORK)
    assert prebuilds_group_workloads(LEADERWORKERSET) is LEADERWORKERSET
    assert not capabilities.is_webhook_only(LEADERWORKERSET)
    assert not capabilities.is_local_only(LEADERWORKERSET)
    assert LEADERWORKERSET in capabilities.dispatchable(REGISTRY)


def test_an_lws_on_a_multikueue_queue_is_accepted_to_be_dispatched() -> None:
    ctx = WebhookContext(multikueue_enabled=True, leads_to_multikueue=lambda queue: True)
    assert LEADERWORKERSET.validate_create(queued(), ctx) == []


def test_its_statefulsets_copies_of_the_marked_templates_are_left_to_it() -> None:
    template = copy.deepcopy(queued()["spec"]["leaderWorkerTemplate"]["workerTemplate"])
    worker_sts = StatefulSet("serve-0", "team-a").obj()
    worker_sts["spec"]["template"] = template
    ctx = WebhookContext(default_local_queue_exists=True)
    defaulted = STATEFULSET.default(worker_sts, ctx)
    assert defaulted["spec"]["template"] == template, "no statefulset group marks"
