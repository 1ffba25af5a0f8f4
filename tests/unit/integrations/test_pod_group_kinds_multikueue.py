"""MultiKueue adapters of the kinds without managedBy: a Pod (and each Pod of a group), a
StatefulSet and a LeaderWorkerSet, as upstream v0.19.2's adapters copy them and sync."""

from __future__ import annotations

import copy
from typing import Any

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION
from integrations.deployment.kind import DEPLOYMENT
from integrations.framework import job_capabilities as capabilities
from integrations.framework.job_kind import StatusSyncDecision
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL
from integrations.framework.multikueue_kinds import (
    dispatched_without_managed_by,
    names_remote_workloads,
    stays_gated_when_dispatched,
)
from integrations.framework.webhook_context import WebhookContext
from integrations.leaderworkerset import groups as lws_groups
from integrations.leaderworkerset.kind import LEADERWORKERSET
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from integrations.statefulset import groups as sts_groups
from integrations.statefulset.kind import STATEFULSET
from tests.builders import Deployment, LeaderWorkerSet, Pod, StatefulSet

GATE = "kueue.x-k8s.io/admission"
MANAGED = "kueue.x-k8s.io/managed"
QUEUE = "kueue.x-k8s.io/queue-name"
ORIGIN = "mk-origin"
TO_MULTIKUEUE = WebhookContext(multikueue_enabled=True, leads_to_multikueue=lambda _: True)


def manager_pod(name: str = "infer") -> dict[str, Any]:
    """A queued Pod as the manager's apiserver stores it: gated, finalized, owned."""
    pod = POD.default(
        Pod(name, "team-a").uid(f"uid-{name}").queue("team").requests({"cpu": "1"}).obj(),
        WebhookContext(),
    )
    pod["metadata"]["resourceVersion"] = "7"
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "x"}]
    pod["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
        ],
    }
    return pod


def worker_status(*, scheduled: bool, phase: str = "Pending") -> dict[str, Any]:
    condition = (
        {"type": "PodScheduled", "status": "True"}
        if scheduled
        else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    )
    return {"phase": phase, "conditions": [condition], "podIP": "10.0.0.9"}


def test_the_pod_like_kinds_are_dispatched_without_managed_by_and_deployments_are_not() -> None:
    dispatchable = capabilities.dispatchable(REGISTRY)
    for kind in (POD, STATEFULSET, LEADERWORKERSET):
        assert kind in dispatchable
        assert dispatched_without_managed_by(kind)
    assert stays_gated_when_dispatched(POD)
    assert not stays_gated_when_dispatched(STATEFULSET), "its Pods are, as Pods"
    assert names_remote_workloads(LEADERWORKERSET) is LEADERWORKERSET
    assert names_remote_workloads(STATEFULSET) is None
    assert DEPLOYMENT not in dispatchable
    assert not dispatched_without_managed_by(REGISTRY.get("batch/job"))


def test_a_pod_is_copied_gated_and_labelled_without_what_belongs_to_the_manager() -> None:
    local = manager_pod()
    remote = POD.remote_job(local, workload_name="pod-infer-1a2b3", origin=ORIGIN)
    meta = remote["metadata"]
    assert (remote["apiVersion"], remote["kind"]) == ("v1", "Pod")
    assert (meta["name"], meta["namespace"]) == ("infer", "team-a")
    assert meta["labels"][MULTIKUEUE_ORIGIN_LABEL] == ORIGIN
    assert meta["labels"][PREBUILT_WORKLOAD_LABEL] == "pod-infer-1a2b3"
    assert meta["labels"][MANAGED] == "true" and meta["labels"][QUEUE] == "team"
    assert {"name": GATE} in remote["spec"]["schedulingGates"], "the worker's Kueue ungates it"
    assert remote["spec"]["containers"] == local["spec"]["containers"]
    for generated in ("uid", "resourceVersion", "finalizers", "ownerReferences"):
        assert generated not in meta
    assert "status" not in remote
    assert "pod-infer-1a2b3" not in str(local), "the manager's Pod is left as it was"


def test_the_worker_pods_status_comes_back_but_the_gated_pod_stays_scheduling_gated() -> None:
    local = manager_pod()
    remote = {"metadata": {"name": "infer"}, "status": worker_status(scheduled=False)}
    sync = POD.remote_status_sync(local, remote)
    assert sync.decision is StatusSyncDecision.COPY and sync.status is not None
    assert sync.status["podIP"] == "10.0.0.9"
    assert sync.status["conditions"] == [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ], "not Unschedulable: an autoscaler on the manager must not scale up for it"

    running = {"metadata": {"name": "infer"}, "status": worker_status(scheduled=True)}
    running["status"]["phase"] = "Running"
    sync = POD.remote_status_sync(local, running)
    assert sync.status == running["status"], "once placed, the worker's condition is copied"


def test_a_pod_in_step_or_being_deleted_on_the_manager_is_not_written() -> None:
    local = manager_pod()
    remote = {"status": worker_status(scheduled=True, phase="Succeeded")}
    synced = copy.deepcopy(local)
    synced["status"] = copy.deepcopy(remote["status"])
    assert POD.remote_status_sync(synced, remote).decision is StatusSyncDecision.IN_SYNC
    deleting = copy.deepcopy(local)
    deleting["metadata"]["deletionTimestamp"] = "2026-12-02T14:00:00Z"
    assert POD.remote_status_sync(deleting, remote).decision is StatusSyncDecision.NOT_MANAGED


def test_each_pod_of_a_group_is_copied_under_its_own_name_naming_the_group_workload() -> None:
    members = [
        POD.default(Pod(n, "team-a").uid(n).queue("team").group("g", 2).obj(), WebhookContext())
        for n in ("g-0", "g-1")
    ]
    group = POD.compose("team-a", "g", members)
    copies = [POD.remote_job(m, workload_name="g", origin=ORIGIN) for m in POD.members_of(group)]
    assert [c["metadata"]["name"] for c in copies] == ["g-0", "g-1"]
    assert {c["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] for c in copies} == {"g"}
    assert {c["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] for c in copies} == {"g"}


def test_pods_deployments_and_their_pods_may_all_queue_behind_multikueue() -> None:
    # upstream v0.19.2's multikueue/baseline: a Deployment stays on the manager, each of its
    # Pods is dispatched on its own through the Pod adapter.
    assert POD.validate_create(manager_pod(), TO_MULTIKUEUE) == []
    deployment = Deployment("web", "team-a", replicas=2).queue("team").obj()
    assert DEPLOYMENT.validate_create(deployment, TO_MULTIKUEUE) == []
    replica = manager_pod("web-abc")
    replica["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] = "deployment"
    assert POD.validate_create(replica, TO_MULTIKUEUE) == []
    moved = copy.deepcopy(deployment)
    moved["metadata"]["labels"][QUEUE] = "other"
    assert DEPLOYMENT.validate_update(deployment, moved, TO_MULTIKUEUE) == []


def test_a_statefulset_is_copied_whole_and_the_worker_names_its_workload_as_the_manager() -> None:
    local = STATEFULSET.default(
        StatefulSet("web", "team-a", replicas=2).uid("sts-uid").queue("team").obj(),
        WebhookContext(),
    )
    name = sts_groups.workload_name(local)
    remote = STATEFULSET.remote_job(local, workload_name=name, origin=ORIGIN)
    meta = remote["metadata"]
    assert (remote["apiVersion"], remote["kind"]) == ("apps/v1", "StatefulSet")
    assert meta["labels"][MULTIKUEUE_ORIGIN_LABEL] == ORIGIN
    assert meta["labels"][PREBUILT_WORKLOAD_LABEL] == name
    assert meta["annotations"][MULTIKUEUE_ORIGIN_UID_ANNOTATION] == "sts-uid"
    assert remote["spec"] == local["spec"]
    # On the worker the copy has its own UID; its Workload is still the dispatched one.
    remote["metadata"]["uid"] = "worker-uid"
    assert sts_groups.workload_name(remote) == name
    assert not STATEFULSET.creates_group_workloads(remote)
    assert STATEFULSET.remote_status_sync(local, remote).decision is (
        StatusSyncDecision.NOT_MANAGED
    ), "no status comes back, as upstream"


def test_an_lws_is_copied_whole_standing_for_every_group_workload_of_the_manager() -> None:
    builder = LeaderWorkerSet("serve", "team-a", replicas=2, size=2).uid("lws-uid").queue("team")
    local = LEADERWORKERSET.default(builder.leader().obj(), WebhookContext())
    wanted = [g.name for g in LEADERWORKERSET.wanted_group_workloads(local)]
    remote = LEADERWORKERSET.remote_job(local, workload_name=wanted[0], origin=ORIGIN)
    meta = remote["metadata"]
    assert meta["labels"][MULTIKUEUE_ORIGIN_LABEL] == ORIGIN
    assert PREBUILT_WORKLOAD_LABEL not in meta["labels"], "it stands for several Workloads"
    assert meta["annotations"][MULTIKUEUE_ORIGIN_UID_ANNOTATION] == "lws-uid"
    remote["metadata"]["uid"] = "worker-uid"
    assert LEADERWORKERSET.remote_workload_names(remote) == wanted
    assert [lws_groups.group_workload_name(remote, i) for i in (0, 1)] == wanted
    assert not LEADERWORKERSET.creates_group_workloads(remote)
    unlabelled = copy.deepcopy(remote)
    del unlabelled["metadata"]["annotations"][MULTIKUEUE_ORIGIN_UID_ANNOTATION]
    assert LEADERWORKERSET.remote_workload_names(unlabelled) == []
