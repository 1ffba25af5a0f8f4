"""When a node has failed a TAS workload (upstream v0.19.2's default gates), and which
pods pinned to it are stranded."""

from __future__ import annotations

from typing import Any

from core.engine.model import Toleration
from core.manager.tas_node_failure import workload_assigned_node_index
from core.manager.tas_node_health import NodeVerdict, stranded_pods, verdict
from tests.unit.hub.test_topology_ungate_plan import _pod, _workload

RUNNING: dict[str, Any] = {"metadata": {}, "status": {"phase": "Running"}}


def _node(*, ready: str | None = "True", taints: list[dict[str, Any]] | None = None) -> Any:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "h1"},
        "spec": {"taints": taints or []},
        "status": {"conditions": conditions},
    }


NO_EXECUTE = {"key": "example.com/broken", "effect": "NoExecute"}


def test_a_deleted_node_or_one_without_a_ready_condition_fails_at_once() -> None:
    assert verdict(None, [], [RUNNING]) is NodeVerdict.FAILED
    assert verdict(_node(ready=None), [], [RUNNING]) is NodeVerdict.FAILED


def test_a_not_ready_node_fails_only_once_the_workloads_pods_on_it_stopped() -> None:
    assert verdict(_node(ready="False"), [], [RUNNING]) is NodeVerdict.HEALTHY
    terminating = {"metadata": {"deletionTimestamp": "now"}, "status": {"phase": "Running"}}
    assert verdict(_node(ready="False"), [], [terminating]) is NodeVerdict.FAILED
    assert verdict(_node(ready="False"), [], []) is NodeVerdict.FAILED


def test_an_untolerated_or_only_temporarily_tolerated_taint_fails_the_node() -> None:
    node = _node(taints=[NO_EXECUTE])
    assert verdict(node, [], []) is NodeVerdict.FAILED
    briefly = Toleration(key="example.com/broken", operator="Exists", toleration_seconds=30)
    assert verdict(node, [briefly], []) is NodeVerdict.FAILED
    for_good = Toleration(key="example.com/broken", operator="Exists")
    assert verdict(node, [for_good], []) is NodeVerdict.HEALTHY
    assert verdict(_node(taints=[{"key": "k", "effect": "PreferNoSchedule"}]), [], []) is (
        NodeVerdict.HEALTHY
    )


def test_pods_pinned_to_the_node_ungated_and_unbound_are_stranded() -> None:
    pinned = _pod("a", gated=False, host="h1")
    gated = _pod("b")
    bound = _pod("c", gated=False, host="h1")
    bound["spec"]["nodeName"] = "h1"
    elsewhere = _pod("d", gated=False, host="h2")
    assert [
        p["metadata"]["name"] for p in stranded_pods("h1", [pinned, gated, bound, elsewhere])
    ] == ["a"]


def test_admitted_workloads_are_indexed_by_the_nodes_their_assignment_names() -> None:
    wl = _workload(("r1", "h1", 1), ("r1", "h2", 2))
    wl["status"]["conditions"].append({"type": "QuotaReserved", "status": "True"})
    assert list(workload_assigned_node_index(wl)) == ["h1", "h2"]
    pending = _workload(("r1", "h1", 1))
    assert list(workload_assigned_node_index(pending)) == []
