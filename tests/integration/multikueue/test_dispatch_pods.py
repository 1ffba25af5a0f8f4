"""MultiKueue dispatch of a pod group on real apiservers: the hub's dispatch in-process,
the test playing the manager's engine and the workers' Kueue (dispatch_harness.py).

A group of two gated Pods and its Workload on the manager: once a worker admits the
Workload's copy, both Pods are copied there (each under its own name, with the origin
and the group's Workload as prebuilt name), the manager's Pods keep their gate and get
the worker Pods' status (the PodScheduled condition staying SchedulingGated until the
worker Pod is scheduled), and once the copy finishes both copies are removed. The
garbage collector removes every Pod of a group whose manager Workload is gone.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from core.api.codec import to_builtins
from core.kube.errors import AlreadyExists
from core.kube.resources import PODS
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.pod.kind import POD
from tests.builders import Pod, Workload
from tests.integration.multikueue.dispatch_harness import (
    ALL_AT_ONCE,
    ORIGIN_LABEL,
    POD_TEMPLATE,
    PREBUILT_LABEL,
    WORKLOADS,
    Fleet,
    condition,
    eventually,
    now_text,
)
from tests.integration.rbac_resources import SERVICE_ACCOUNTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

GATE = "kueue.x-k8s.io/admission"
MEMBERS = ("pair-a", "pair-b")


async def _default_service_accounts(mk: Fleet) -> None:
    """No controller-manager on the lite clusters: the `default` account Pods need."""
    for client in (mk.manager, *mk.workers):
        with contextlib.suppress(AlreadyExists):
            await client.create(
                SERVICE_ACCOUNTS, {"metadata": {"name": "default", "namespace": mk.ns}}
            )


async def _submit_group(mk: Fleet) -> str:
    """The group's gated Pods as the Pod webhook leaves them, and its Workload holding
    quota with the check Pending (the test plays the manager's job controller and engine)."""
    members = []
    for name in MEMBERS:
        pod = Pod(name, mk.ns).queue("lq").group("pair", 2).requests({"cpu": "1"}).obj()
        members.append(await mk.manager.create(PODS, POD.default(pod, WebhookContext())))
    group = POD.compose(mk.ns, "pair", members)
    workload = to_builtins(
        POD.composed_workload(build_workload(POD, group, PriorityClasses()), group)
    )
    workload["spec"]["queueName"] = "lq"
    created = await mk.manager.create(WORKLOADS, workload)
    pod_sets = created["spec"]["podSets"]
    await mk.manager.patch(
        WORKLOADS,
        "pair",
        {
            "status": {
                "conditions": [condition("QuotaReserved", message="Quota reserved")],
                "admission": {
                    "clusterQueue": f"cq-{mk.suffix}",
                    "podSetAssignments": [
                        {
                            "name": pod_sets[0]["name"],
                            "flavors": {"cpu": "default"},
                            "resourceUsage": {"cpu": "2"},
                            "count": 2,
                        }
                    ],
                },
                "admissionChecks": [
                    {
                        "name": mk.check,
                        "state": "Pending",
                        "message": "",
                        "lastTransitionTime": now_text(),
                    }
                ],
            }
        },
        namespace=mk.ns,
        subresource="status",
    )
    return "pair"


def _gated(pod: dict[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or ())


def _scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    for entry in (pod.get("status") or {}).get("conditions") or ():
        if entry.get("type") == "PodScheduled":
            return dict(entry)
    return None


async def test_a_pod_group_is_copied_pod_by_pod_its_status_comes_back_and_goes_with_it(
    mk: Fleet,
) -> None:
    await _default_service_accounts(mk)
    await mk.start(ALL_AT_ONCE, frameworks=("batch/job", "pod"))
    name = await _submit_group(mk)
    await mk.wait_remote(0, name)
    await mk.admit_on(0, name)
    local = await mk.wait_check(name, "Ready")
    assert local["status"]["clusterName"] == mk.clusters[0]

    copies = [await mk.wait_remote(0, member, PODS) for member in MEMBERS]
    for copy in copies:
        labels = copy["metadata"]["labels"]
        assert (labels[ORIGIN_LABEL], labels[PREBUILT_LABEL]) == (mk.origin, name)
        assert labels["kueue.x-k8s.io/pod-group-name"] == "pair"
        assert _gated(copy), "the worker's Kueue ungates it"
        assert not copy["metadata"].get("ownerReferences")
    for member in MEMBERS:
        assert await mk.remote(1, member, PODS) is None

    # The worker's scheduler has not placed them yet: the manager's Pods stay gated and
    # keep their SchedulingGated condition, while the rest of the status comes back.
    for member in MEMBERS:
        await mk.workers[0].patch(
            PODS,
            member,
            {
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "lastTransitionTime": now_text(),
                        }
                    ],
                    "qosClass": "Burstable",
                }
            },
            namespace=mk.ns,
            subresource="status",
        )

    async def kept_gated() -> list[dict[str, Any]] | None:
        pods = [await mk.manager.get(PODS, m, namespace=mk.ns) for m in MEMBERS]
        synced = [p for p in pods if (p.get("status") or {}).get("qosClass") == "Burstable"]
        return pods if len(synced) == 2 else None

    pods = await eventually(kept_gated, what="the worker Pods' status on the manager's")
    for pod in pods:
        assert _gated(pod)
        scheduled = _scheduled(pod)
        assert scheduled is None or scheduled.get("reason") != "Unschedulable"

    # Both run and succeed on the worker: the manager's Pods show it.
    for member in MEMBERS:
        await mk.workers[0].patch(
            PODS,
            member,
            {
                "status": {
                    "phase": "Succeeded",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now_text()}
                    ],
                }
            },
            namespace=mk.ns,
            subresource="status",
        )

    async def succeeded_here() -> bool:
        pods = [await mk.manager.get(PODS, m, namespace=mk.ns) for m in MEMBERS]
        return all((p.get("status") or {}).get("phase") == "Succeeded" for p in pods)

    await eventually(succeeded_here, what="the manager's Pods Succeeded")
    for member in MEMBERS:
        pod = await mk.manager.get(PODS, member, namespace=mk.ns)
        assert _gated(pod) and not pod["spec"].get("nodeName"), "never run on the manager"

    await mk.workers[0].patch(
        WORKLOADS,
        name,
        {
            "status": {
                "conditions": [
                    condition("QuotaReserved"),
                    condition("Admitted"),
                    condition("Finished", reason="Succeeded", message="Pods succeeded: 2/2."),
                ]
            }
        },
        namespace=mk.ns,
        subresource="status",
    )

    async def finished() -> bool:
        workload = await mk.local(name)
        return any(
            c["type"] == "Finished" and c["status"] == "True"
            for c in workload["status"].get("conditions") or ()
        )

    await eventually(finished, what="the manager's group Workload finished")
    for member in MEMBERS:
        await mk.wait_gone(0, member, PODS)
    await mk.wait_gone(0, name)


async def test_garbage_collection_removes_every_pod_of_an_orphaned_group_and_only_ours(
    mk: Fleet,
) -> None:
    await _default_service_accounts(mk)
    await mk.start(ALL_AT_ONCE, gc_interval=1.0, frameworks=("batch/job", "pod"))
    worker = mk.workers[0]
    ours = {ORIGIN_LABEL: mk.origin}
    workload = Workload("orphan", mk.ns).labels(ours).queue("lq")
    await worker.create(WORKLOADS, workload.pod_set("main", 2, template=POD_TEMPLATE).obj())
    for name, labels in (
        ("orphan-a", {**ours, PREBUILT_LABEL: "orphan"}),
        ("orphan-b", {**ours, PREBUILT_LABEL: "orphan"}),
        ("users-pod", {PREBUILT_LABEL: "orphan"}),
    ):
        pod = Pod(name, mk.ns).labels(labels).group("orphan", 2).gate(GATE).obj()
        await worker.create(PODS, pod)
    for name in ("orphan-a", "orphan-b"):
        await mk.wait_gone(0, name, PODS)
    await mk.wait_gone(0, "orphan")
    assert await mk.remote(0, "users-pod", PODS) is not None, "never one without our origin"
