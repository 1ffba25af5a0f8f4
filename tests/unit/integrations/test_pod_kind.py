"""The plain Pod kind on the seam: webhook, pod set, start and stop, status, capabilities."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.api.codec import decode
from core.api.meta import Condition, ConditionStatus
from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Admission, PodSetAssignment, Workload
from core.api.workload_conditions import WorkloadReason
from core.manager.webhooks.configurations import (
    UrlEndpoint,
    WebhookSettings,
    mutating_configuration,
    validating_configuration,
)
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework import job_capabilities as capabilities
from integrations.framework.job_kind import JobSubresource
from integrations.framework.json_patch import apply_patch
from integrations.framework.pod_set_info import InvalidPodSetInfo
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.framework.workload_matching import match_workloads
from integrations.pod.kind import POD
from integrations.registry import REGISTRY
from tests.builders import Pod, kwok_pod

GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
# As upstream with TAS on: every gated Pod waits for both; a non-TAS admission lifts both.
WEBHOOK_GATES = [{"name": GATE}, {"name": TOPOLOGY_GATE}]
MANAGED = "kueue.x-k8s.io/managed"
QUEUE = "kueue.x-k8s.io/queue-name"
FLAVOR = decode(
    ResourceFlavor,
    {
        "metadata": {"name": "gpu"},
        "spec": {
            "nodeLabels": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    },
)


def queued_pod(name: str = "infer") -> dict[str, Any]:
    """A Pod as stored after the webhook: queued, gated, with the finalizer."""
    pod = (
        kwok_pod(name, gpus=1)
        .namespace("team-a")
        .uid("5b0f3a8e-1111-4222-8333-444455556666")
        .resource_version("3")
        .queue("team")
        .label(MANAGED, "true")
        .finalizers(MANAGED)
        .gate(GATE)
    )
    return pod.obj()


def admitted(workload: Workload) -> Workload:
    """`workload` with quota reserved on the GPU flavor and admitted."""
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
            PodSetAssignment(name="main", flavors={"nvidia.com/gpu": "gpu", "cpu": "gpu"}, count=1)
        ],
    )
    return workload


def running(pod: dict[str, Any], workload: Workload) -> dict[str, Any]:
    """The Pod started on `workload`, then scheduled and running on a node."""
    started = POD.start(pod, workload, {"gpu": FLAVOR})
    started["spec"]["nodeName"] = "gpu-node-0"
    started["status"] = {"phase": "Running"}
    return started


# -- webhook -------------------------------------------------------------------------------
def test_a_pod_with_a_queue_name_is_gated_marked_and_held_by_the_finalizer() -> None:
    pod = Pod("p", "team-a").queue("team").obj()
    defaulted = POD.default(pod, WebhookContext())
    assert defaulted["spec"]["schedulingGates"] == WEBHOOK_GATES
    assert defaulted["metadata"]["labels"][MANAGED] == "true"
    assert defaulted["metadata"]["finalizers"] == [MANAGED]
    assert POD.is_suspended(defaulted)
    assert POD.default(defaulted, WebhookContext()) == defaulted, "defaulting twice adds nothing"


@pytest.mark.parametrize(
    ("pod", "ctx"),
    [
        (Pod("p", "team-a").obj(), WebhookContext()),
        (Pod("p", "other").queue("team").obj(), WebhookContext(namespace_selected=False)),
        (Pod("p", "team-a").queue("team").obj(), WebhookContext(owner_is_managed_kind=True)),
        (Pod("p", "team-a").queue("team").obj(), WebhookContext(ancestor_managed_by_kueue=True)),
    ],
    ids=[
        "no queue name",
        "namespace not selected by managedJobsNamespaceSelector",
        "owned by another enabled kind",
        "an ancestor is queued",
    ],
)
def test_other_pods_are_left_exactly_as_they_are(pod: dict[str, Any], ctx: WebhookContext) -> None:
    assert POD.default(pod, ctx) == pod


def test_a_pod_without_a_queue_gets_the_default_local_queue_when_there_is_one() -> None:
    defaulted = POD.default(
        Pod("p", "team-a").obj(), WebhookContext(default_local_queue_exists=True)
    )
    assert defaulted["metadata"]["labels"][QUEUE] == "default"
    assert defaulted["spec"]["schedulingGates"] == WEBHOOK_GATES


def test_manage_jobs_without_queue_name_gates_every_pod_of_a_selected_namespace() -> None:
    ctx = WebhookContext(manage_jobs_without_queue_name=True)
    assert POD.default(Pod("p", "team-a").obj(), ctx)["spec"]["schedulingGates"] == WEBHOOK_GATES


def test_a_pod_its_parent_suspends_is_gated_without_the_finalizer() -> None:
    pod = Pod("p", "x").annotation("kueue.x-k8s.io/pod-suspending-parent", "statefulset").obj()
    defaulted = POD.default(pod, WebhookContext(namespace_selected=False))
    assert defaulted["spec"]["schedulingGates"] == WEBHOOK_GATES
    assert "finalizers" not in defaulted["metadata"]


def _messages(errors: list[Any]) -> str:
    return "; ".join(str(e) for e in errors)


def test_validation_follows_upstreams_pod_rules() -> None:
    ctx = WebhookContext()
    assert POD.validate_create(queued_pod(), ctx) == []
    bad_label = Pod("p").label(MANAGED, "yes").obj()
    assert "managed label value can only be 'true'" in _messages(
        POD.validate_create(bad_label, ctx)
    )
    no_count = Pod("p").label("kueue.x-k8s.io/pod-group-name", "g").obj()
    assert "pod-group-total-count" in _messages(POD.validate_create(no_count, ctx))
    no_name = Pod("p").annotation("kueue.x-k8s.io/pod-group-total-count", "2").obj()
    assert "pod-group-name" in _messages(POD.validate_create(no_name, ctx))
    bad_count = Pod("p").group("g", 2).annotation("kueue.x-k8s.io/pod-group-total-count", "x")
    assert "positive integer" in _messages(POD.validate_create(bad_count.obj(), ctx))


def test_a_queued_pod_may_name_a_queue_leading_to_multikueue() -> None:
    ctx = WebhookContext(leads_to_multikueue=lambda queue: queue == "team")
    assert POD.validate_create(queued_pod(), ctx) == []


def test_a_running_pods_queue_and_group_name_cannot_change() -> None:
    workload = admitted(build_workload(POD, queued_pod(), PriorityClasses()))
    old = running(queued_pod(), workload)
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE] = "other"
    assert "queue-name" in _messages(POD.validate_update(old, new, WebhookContext()))
    grouped = Pod("p").group("g", 2).obj()
    renamed = Pod("p").group("h", 2).obj()
    assert "field is immutable" in _messages(
        POD.validate_update(grouped, renamed, WebhookContext())
    )


# -- Workload ------------------------------------------------------------------------------
def test_a_pod_is_one_pod_set_main_of_one_pod_named_after_the_pod() -> None:
    pod = queued_pod()
    workload = build_workload(POD, pod, PriorityClasses())
    assert [(p.name, p.count) for p in workload.spec.pod_sets] == [("main", 1)]
    assert workload.spec.pod_sets[0].template == {"spec": pod["spec"]}
    assert workload.spec.queue_name == "team"
    assert workload.metadata.name.startswith("pod-infer-")
    owner = workload.metadata.owner_references[0]
    assert (owner.api_version, owner.kind, owner.name) == ("v1", "Pod", "infer")


# -- running -------------------------------------------------------------------------------
def test_admission_ungates_the_pod_onto_the_flavors_nodes() -> None:
    pod = queued_pod()
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    started = POD.start(pod, workload, {"gpu": FLAVOR})
    assert "schedulingGates" not in started["spec"]
    assert started["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in started["spec"][
        "tolerations"
    ]
    assert started["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert not POD.is_suspended(started)
    assert POD.start(started, workload, {"gpu": FLAVOR}) == started, "an ungated pod stays"


def test_the_topology_gate_goes_with_the_admission_gate_unless_the_admission_keeps_it() -> None:
    pod = queued_pod()
    pod["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/topology"})
    pod["spec"]["schedulingGates"].append({"name": "example.com/other"})
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    started = POD.start(pod, workload, {"gpu": FLAVOR})
    assert started["spec"]["schedulingGates"] == [{"name": "example.com/other"}]


def test_an_admission_of_two_pod_sets_cannot_start_a_pod() -> None:
    pod = queued_pod()
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    extra = copy.deepcopy(workload.spec.pod_sets[0])
    extra.name = "second"
    workload.spec.pod_sets.append(extra)
    workload.status.admission.pod_set_assignments.append(  # type: ignore[union-attr]
        PodSetAssignment(name="second", flavors={"cpu": "gpu"}, count=1)
    )
    with pytest.raises(InvalidPodSetInfo):
        POD.start(pod, workload, {"gpu": FLAVOR})


def test_a_scheduled_running_pod_still_matches_its_admitted_workload() -> None:
    pod = queued_pod()
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    match = match_workloads(POD, running(pod, workload), [workload], {"gpu": FLAVOR})
    assert match.match is workload and not match.stop_job


def test_stopping_a_started_pod_marks_it_for_termination_and_deleting_it_is_the_stop() -> None:
    pod = queued_pod()
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    live = running(pod, workload)
    writes = POD.plan_stop(live, workload)
    assert [w.subresource for w in writes] == [JobSubresource.STATUS]
    marked = apply_patch(live, writes[0].patch)
    condition = marked["status"]["conditions"][-1]
    assert (condition["type"], condition["status"]) == ("TerminationTarget", "True")
    assert capabilities.stops_by_deletion(POD)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_gated_or_terminated_or_terminating_pod_needs_no_stop(phase: str) -> None:
    pod = queued_pod()
    assert POD.plan_stop(pod, None) == []
    workload = admitted(build_workload(POD, pod, PriorityClasses()))
    live = running(pod, workload)
    live["status"]["phase"] = phase
    assert POD.plan_stop(live, workload) == []
    deleting = running(pod, workload)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert POD.plan_stop(deleting, workload) == []


def test_finished_from_the_phase_with_the_pods_message() -> None:
    pod = queued_pod()
    assert POD.finished(pod) is None
    pod["status"] = {"phase": "Running"}
    assert POD.finished(pod) is None
    pod["status"] = {"phase": "Succeeded"}
    done = POD.finished(pod)
    assert done is not None and done.reason is WorkloadReason.SUCCEEDED
    pod["status"] = {"phase": "Failed", "message": "OOMKilled"}
    failed = POD.finished(pod)
    assert failed is not None
    assert (failed.reason, failed.message) == (WorkloadReason.FAILED, "OOMKilled")


def test_pods_ready_from_the_ready_condition_and_a_single_pod_never_counts_active() -> None:
    pod = queued_pod()
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
    assert not POD.pods_ready(pod)
    pod["status"]["conditions"][0]["status"] = "True"
    assert POD.pods_ready(pod)
    assert not POD.is_active(pod) and POD.reclaimable_pods(pod) == []


# -- capabilities and the generic machinery ---------------------------------------------------
def test_only_pods_the_webhook_marked_managed_are_the_controllers() -> None:
    assert capabilities.skips(POD, Pod("p").queue("team").obj())
    assert not capabilities.skips(POD, queued_pod())
    assert capabilities.job_finalizer_of(POD) == MANAGED
    assert (
        not capabilities.skips(BATCH_JOB, {}) and capabilities.job_finalizer_of(BATCH_JOB) is None
    )


def test_with_pods_enabled_every_other_kind_owns_its_pods() -> None:
    assert REGISTRY.get("pod") is POD
    with_pods = REGISTRY.enabled(["batch/job", "jobset.x-k8s.io/jobset", "pod"])
    assert with_pods.queued_as_a_whole == frozenset(
        {("batch", "Job"), ("jobset.x-k8s.io", "JobSet")}
    )
    without = REGISTRY.enabled(["batch/job", "pod"]).enabled(["batch/job"])
    assert without.queued_as_a_whole == frozenset()


def test_multikueue_dispatches_pods() -> None:
    assert POD in capabilities.dispatchable(REGISTRY.kinds)
    assert REGISTRY.get("batch/job") in capabilities.dispatchable(REGISTRY.kinds)


def _settings(**extra: Any) -> WebhookSettings:
    return WebhookSettings(
        endpoint=UrlEndpoint("https://127.0.0.1:9443"),
        hub_namespace="fleetq-system",
        job_resources=(BATCH_JOB.resource, POD.resource),
        managed_namespaces_only=frozenset({POD.resource}),
        managed_jobs_namespace_selector={"matchLabels": {"team": "a"}},
        **extra,
    )


def test_pod_webhooks_are_confined_to_the_managed_namespaces_and_never_system_ones() -> None:
    settings = _settings()
    for configuration in (mutating_configuration(settings), validating_configuration(settings)):
        hooks = {hook["name"]: hook for hook in configuration["webhooks"]}
        pod_prefix = "mpod" if configuration["kind"].startswith("Mutating") else "vpod"
        job_prefix = pod_prefix[0] + "job"
        pod_terms = hooks[f"{pod_prefix}.fleetq.dev"]["namespaceSelector"]["matchExpressions"]
        job_terms = hooks[f"{job_prefix}.fleetq.dev"]["namespaceSelector"]["matchExpressions"]
        excluded = {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["fleetq-system", "kube-system"],
        }
        assert pod_terms == [excluded, {"key": "team", "operator": "In", "values": ["a"]}]
        assert job_terms == [excluded]
        assert hooks[f"{pod_prefix}.fleetq.dev"]["failurePolicy"] == "Fail"
