"""The Deployment kind: a webhook that queues its Pods as plain Pods, nothing else."""

from __future__ import annotations

from typing import Any

from core.manager.configuration import Configuration
from integrations.deployment.kind import DEPLOYMENT
from integrations.framework import job_capabilities as capabilities
from integrations.framework.webhook_context import WebhookContext
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from tests.builders import Deployment, Pod

QUEUE = "kueue.x-k8s.io/queue-name"
MANAGED = "kueue.x-k8s.io/managed"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
PRIORITY = "kueue.x-k8s.io/priority-class"


def template_meta(deployment: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = deployment["spec"]["template"]["metadata"]
    return meta


def test_a_queued_deployment_marks_its_pod_template_so_each_pod_is_queued() -> None:
    deployment = Deployment("infer", "team-a", replicas=3).queue("team").priority_class("high")
    defaulted = DEPLOYMENT.default(deployment.obj(), WebhookContext())
    meta = template_meta(defaulted)
    assert meta["labels"] == {"app": "infer", MANAGED: "true", QUEUE: "team", PRIORITY: "high"}
    assert meta["annotations"] == {PARENT: "deployment"}
    assert defaulted["spec"]["replicas"] == 3, "the Deployment itself is not suspended"


def test_its_pods_are_gated_by_the_pod_webhook_without_the_pod_finalizer() -> None:
    deployment = DEPLOYMENT.default(
        Deployment("infer", "team-a").queue("team").obj(), WebhookContext()
    )
    template = deployment["spec"]["template"]
    pod = Pod.from_obj({"apiVersion": "v1", "kind": "Pod", **template}).obj()
    pod["metadata"]["name"] = "infer-abc"
    gated = POD.default(pod, WebhookContext())
    assert gated["spec"]["schedulingGates"] == [
        {"name": "kueue.x-k8s.io/admission"},
        {"name": "kueue.x-k8s.io/topology"},
    ]
    assert "finalizers" not in gated["metadata"]
    assert not capabilities.skips(POD, gated), "the pod controller queues it"


def test_other_deployments_are_left_alone() -> None:
    plain = Deployment("web", "team-a").obj()
    assert DEPLOYMENT.default(plain, WebhookContext()) == plain
    queued = Deployment("web", "other").queue("team").obj()
    assert DEPLOYMENT.default(queued, WebhookContext(namespace_selected=False)) == queued


def test_a_deployment_without_a_queue_gets_the_default_local_queue() -> None:
    ctx = WebhookContext(default_local_queue_exists=True)
    defaulted = DEPLOYMENT.default(Deployment("web", "team-a").obj(), ctx)
    assert defaulted["metadata"]["labels"][QUEUE] == "default"
    assert template_meta(defaulted)["labels"][QUEUE] == "default"


def test_the_queue_name_is_fixed_once_a_replica_is_ready() -> None:
    old = Deployment("web", "team-a").queue("team").obj()
    new = Deployment("web", "team-a").queue("other").obj()
    assert DEPLOYMENT.validate_update(old, new, WebhookContext()) == []
    old["status"] = {"readyReplicas": 1}
    errors = DEPLOYMENT.validate_update(old, new, WebhookContext())
    assert [e.path for e in errors] == ["metadata.labels[kueue.x-k8s.io/queue-name]"]
    bad = Deployment("web", "team-a").queue("Not_A_Name").obj()
    assert DEPLOYMENT.validate_create(bad, WebhookContext())


def test_deployment_is_webhook_only_and_enables_pods() -> None:
    assert capabilities.is_webhook_only(DEPLOYMENT)
    enabled = REGISTRY.enabled(["batch/job", "deployment"])
    assert enabled.names == ("batch/job", "pod", "deployment")
    assert capabilities.reconciled(enabled) == (enabled.get("batch/job"), POD)
    assert capabilities.dispatchable(enabled) == (enabled.get("batch/job"), POD)
    assert enabled.queued_as_a_whole == frozenset({("batch", "Job")})
    configuration = Configuration(frameworks=("deployment",))
    assert configuration.job_kinds.names == ("pod", "deployment")


def test_a_queue_name_changed_by_an_update_reaches_the_pod_template() -> None:
    from integrations.framework import job_webhook
    from integrations.framework.admission_review import Operation

    deployment = Deployment("web", "team-a", replicas=3).queue("invalid-queue").obj()
    marked = DEPLOYMENT.default(deployment, WebhookContext())
    updated = {**marked, "metadata": {**marked["metadata"], "labels": {QUEUE: "team"}}}
    patch = job_webhook.mutation_patch(DEPLOYMENT, Operation.UPDATE, updated, WebhookContext())
    assert {
        "op": "replace",
        "path": "/spec/template/metadata/labels/" + QUEUE.replace("/", "~1"),
        "value": "team",
    } in patch
    assert capabilities.defaulting_operations(DEPLOYMENT) == ["CREATE", "UPDATE"]
    assert capabilities.defaulting_operations(POD) == ["CREATE"]
