"""The topology ungater's plan: which gated pod goes to which domain, from the pods alone."""

from __future__ import annotations

from typing import Any

from core.adapters.topology_encoding import encode
from core.engine.model import TopologyAssignment, TopologyDomainAssignment
from core.manager.topology_ungate_plan import plan_ungates, ungate_patch
from integrations.pod.topology_gate import add_topology_gate

RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"
GATE = {"name": "kueue.x-k8s.io/topology"}


def _assignment(*domains: tuple[str, str, int]) -> dict[str, Any]:
    return encode(
        TopologyAssignment(
            levels=(RACK, HOST),
            domains=tuple(TopologyDomainAssignment(values=(r, h), count=c) for r, h, c in domains),
        )
    )


def _workload(
    *domains: tuple[str, str, int],
    admitted: bool = True,
    request: dict[str, Any] | None = None,
    unhealthy: tuple[str, ...] = (),
) -> dict[str, Any]:
    count = sum(c for _, _, c in domains)
    return {
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {
            "podSets": [
                {"name": "main", "count": count, "topologyRequest": request or {"required": RACK}}
            ]
        },
        "status": {
            "conditions": [{"type": "Admitted", "status": "True" if admitted else "False"}],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "count": count, "topologyAssignment": _assignment(*domains)}
                ],
            },
            "unhealthyNodes": [{"name": n} for n in unhealthy],
        },
    }


def _pod(
    name: str,
    *,
    gated: bool = True,
    host: str | None = None,
    index: int | None = None,
    phase: str = "Pending",
) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/podset": "main"}
    if index is not None:
        labels["batch.kubernetes.io/job-completion-index"] = str(index)
    spec: dict[str, Any] = {"schedulingGates": [GATE] if gated else []}
    if host is not None:
        spec["nodeSelector"] = {RACK: "r1", HOST: host}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": labels,
            "annotations": {"kueue.x-k8s.io/workload": "wl"},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def _placed(plan: list[Any]) -> dict[str, str]:
    return {u.pod["metadata"]["name"]: u.node_selector[HOST] for u in plan}


def test_each_domain_gets_its_count_of_gated_pods_with_its_level_labels() -> None:
    wl = _workload(("r1", "h1", 2), ("r1", "h2", 1))
    plan = plan_ungates(wl, [_pod("p0"), _pod("p1"), _pod("p2")])
    assert _placed(plan) == {"p0": "h1", "p1": "h1", "p2": "h2"}
    assert plan[0].node_selector == {RACK: "r1", HOST: "h1"}


def test_pods_already_ungated_into_a_domain_are_counted_not_moved() -> None:
    wl = _workload(("r1", "h1", 2), ("r1", "h2", 1))
    pods = [_pod("p0", gated=False, host="h1"), _pod("p1", gated=False, host="h2"), _pod("p2")]
    assert _placed(plan_ungates(wl, pods)) == {"p2": "h1"}


def test_nothing_is_planned_once_every_pod_is_ungated_so_a_repeat_writes_nothing() -> None:
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 1))
    pods = [_pod("p0", gated=False, host="h1"), _pod("p1", gated=False, host="h2")]
    assert plan_ungates(wl, pods) == []


def test_a_finished_pod_frees_its_slot_for_its_replacement() -> None:
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 1))
    pods = [
        _pod("p0", gated=False, host="h1", phase="Failed"),
        _pod("p1", gated=False, host="h2"),
        _pod("p2"),
    ]
    assert _placed(plan_ungates(wl, pods)) == {"p2": "h1"}


def test_an_indexed_job_places_pods_by_their_completion_index() -> None:
    request = {"required": RACK, "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 2), request=request)
    pods = [_pod("a", index=2), _pod("b", index=0), _pod("c", index=1)]
    assert _placed(plan_ungates(wl, pods)) == {"b": "h1", "c": "h2", "a": "h2"}


def test_ranks_are_dropped_for_greedy_when_a_running_pod_contradicts_them() -> None:
    request = {"required": RACK, "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 1), request=request)
    pods = [_pod("a", index=0, gated=False, host="h2"), _pod("b", index=1)]
    assert _placed(plan_ungates(wl, pods)) == {"b": "h1"}


def test_no_pod_is_ungated_onto_a_node_awaiting_replacement() -> None:
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 1), unhealthy=("h1",))
    assert _placed(plan_ungates(wl, [_pod("p0"), _pod("p1")])) == {"p1": "h2"}


def test_a_workload_not_admitted_ungates_nothing() -> None:
    wl = _workload(("r1", "h1", 1), admitted=False)
    assert plan_ungates(wl, [_pod("p0")]) == []


def test_the_patch_lifts_only_the_topology_gate_and_is_guarded_by_the_resource_version() -> None:
    pod = _pod("p0")
    pod["spec"]["schedulingGates"].append({"name": "example.com/other"})
    patch = ungate_patch(pod, {RACK: "r1", HOST: "h1"})
    assert patch == {
        "metadata": {"resourceVersion": "7"},
        "spec": {
            "schedulingGates": [{"name": "example.com/other"}],
            "nodeSelector": {RACK: "r1", HOST: "h1"},
        },
    }
    assert ungate_patch(_pod("p1"), {})["spec"]["schedulingGates"] is None


def test_the_pod_webhook_gate_copies_the_group_index_label_named_by_the_annotation() -> None:
    pod: dict[str, Any] = {
        "metadata": {
            "labels": {"example.com/rank": "3"},
            "annotations": {"kueue.x-k8s.io/pod-group-pod-index-label": "example.com/rank"},
        },
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
    }
    add_topology_gate(pod)
    add_topology_gate(pod)
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"] == "3"
    assert pod["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}, GATE]


async def test_the_ungater_plans_a_workload_again_only_once_its_last_ungates_are_seen() -> None:
    from typing import cast

    from core.kube.client import KubeClient
    from core.kube.object_store import ObjectStore
    from core.manager.topology_ungater import POD_BY_WORKLOAD, TopologyUngater, pod_workload_index

    workloads: ObjectStore[dict[str, Any]] = ObjectStore()
    pods: ObjectStore[dict[str, Any]] = ObjectStore({POD_BY_WORKLOAD: pod_workload_index})
    workloads.upsert(_workload(("r1", "h1", 1), ("r1", "h2", 1)))
    for name in ("p0", "p1"):
        pod = _pod(name)
        pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] = RACK
        pods.upsert(pod)
    ungater = TopologyUngater(cast(KubeClient, None), workloads=workloads, pods=pods)
    planned = ungater.plan("ns/wl")
    assert planned is not None and len(planned) == 2
    ungater.expected["ns/wl"] = {"uid-p0", "uid-p1"}  # as reconcile records before patching
    assert ungater.plan("ns/wl") is None  # the cache still shows them gated
    seen = _pod("p0", gated=False, host="h1")
    seen["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] = RACK
    ungater._pod_changed(seen, deleted=False)
    assert ungater.plan("ns/wl") is None
    ungater._pod_changed(pods.get("ns/p1") or {}, deleted=True)
    assert ungater.plan("ns/wl") is not None
