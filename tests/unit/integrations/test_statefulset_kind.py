"""The StatefulSet kind: a webhook that queues its Pods as one serving pod group."""

from __future__ import annotations

from typing import Any

from integrations.framework import job_capabilities as capabilities
from integrations.framework.webhook_context import WebhookContext
from integrations.pod import pod_group
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from integrations.statefulset.kind import STATEFULSET
from tests.builders import Pod, StatefulSet

QUEUE = "kueue.x-k8s.io/queue-name"


def queued(replicas: int = 3) -> dict[str, Any]:
    sts = StatefulSet("web", "team-a", replicas=replicas).queue("team").requests({"cpu": "1"})
    return STATEFULSET.default(sts.obj(), WebhookContext())


def pod_of(statefulset: dict[str, Any], index: int) -> dict[str, Any]:
    template = statefulset["spec"]["template"]
    pod = Pod.from_obj({"apiVersion": "v1", "kind": "Pod", **template}).obj()
    pod["metadata"].update(name=f"web-{index}", namespace="team-a", uid=f"u{index}")
    return POD.default(pod, WebhookContext())


def test_a_queued_statefulset_marks_its_template_as_one_serving_group() -> None:
    meta = queued()["spec"]["template"]["metadata"]
    assert meta["labels"]["kueue.x-k8s.io/pod-group-name"] == "statefulset-web"
    assert meta["labels"][QUEUE] == "team" and meta["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert meta["annotations"] == {
        "kueue.x-k8s.io/pod-suspending-parent": "statefulset",
        "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/pod-group-fast-admission": "true",
        "kueue.x-k8s.io/pod-group-serving": "true",
        "kueue.x-k8s.io/role-hash": "main",
    }


def test_its_first_pod_is_enough_for_a_workload_of_all_replicas_that_never_finishes() -> None:
    first = pod_of(queued(), 0)
    assert first["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    assert "finalizers" not in first["metadata"]
    group = pod_group.compose("team-a", "statefulset-web", [first])
    (pod_set,) = POD.pod_sets(group)
    assert (pod_set.name, pod_set.count) == ("main", 3)
    first["status"] = {"phase": "Succeeded"}
    assert POD.finished(pod_group.compose("team-a", "statefulset-web", [first])) is None


def test_replicas_change_only_to_and_from_zero_and_back_to_the_queued_count() -> None:
    ctx = WebhookContext()
    old = queued(3)
    to_zero = {**old, "spec": {**old["spec"], "replicas": 0}}
    assert STATEFULSET.validate_update(old, to_zero, ctx) == []
    to_five = {**old, "spec": {**old["spec"], "replicas": 5}}
    assert STATEFULSET.validate_update(old, to_five, ctx)
    assert STATEFULSET.validate_update(to_zero, old, ctx) == []
    assert "queued as a group of 3" in str(STATEFULSET.validate_update(to_zero, to_five, ctx)[0])


def test_other_statefulsets_are_left_alone_and_statefulset_enables_pods() -> None:
    plain = StatefulSet("db", "team-a").obj()
    assert STATEFULSET.default(plain, WebhookContext()) == plain
    assert STATEFULSET.validate_update(plain, plain, WebhookContext()) == []
    assert capabilities.is_webhook_only(STATEFULSET)
    assert REGISTRY.enabled(["statefulset"]).names == ("pod", "statefulset")
