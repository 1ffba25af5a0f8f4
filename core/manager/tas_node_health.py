"""Whether a node has failed a TAS workload assigned to it, as upstream v0.19.2 judges it
(pure: the Node, the Workload and its pods in, a verdict out).

With upstream's default feature gates (TASFailedNodeReplacement, TASReplaceNodeOnNodeTaints,
TASReplaceNodeOnPodTermination on; the fixed 30 s NotReady timer off):
- a node that is gone, or has no Ready condition, has failed at once;
- a NotReady node, or one with a NoSchedule/NoExecute taint the pod set does not tolerate
  for good (not at all, or only for `tolerationSeconds`), has failed once none of the
  workload's pods on it is still progressing (not terminating, not finished): the node
  is replaced after its pods are gone, not while they still run;
- otherwise the node is healthy for the workload (a node listed before is taken off).
Pods pinned to a failing node by their node selector but never bound there (pending,
ungated) cannot run; upstream marks them Failed so they are replaced
(`stranded_pods`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

from core.adapters.kueue_manifests import tolerations_from
from core.adapters.node_manifests import node_is_ready, taints_from
from core.api.json_types import Json
from core.engine.model import Taint, TaintEffect, Toleration
from core.engine.node_matching import tolerates
from core.manager.topology_ungate_plan import HOSTNAME_LABEL, has_topology_gate, is_finished

_SCHEDULING_EFFECTS = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)


class NodeVerdict(enum.Enum):
    HEALTHY = "healthy"
    FAILED = "failed"


def has_ready_condition(node: Json) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


def progressing(pod: Json) -> bool:
    """Still running or about to: not terminating and not finished."""
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and not is_finished(pod)


def _permanently_tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(tolerates(t, taint) and t.toleration_seconds is None for t in tolerations)


def failing_taints(node: Json, tolerations: Sequence[Toleration]) -> list[Taint]:
    """NoSchedule/NoExecute taints the pod set does not tolerate for good."""
    taints = taints_from((node.get("spec") or {}).get("taints") or ())
    return [
        t
        for t in taints
        if t.effect in _SCHEDULING_EFFECTS and not _permanently_tolerated(t, tolerations)
    ]


def pod_set_tolerations(
    pod_set_templates: Iterable[Json], extra: Iterable[Json]
) -> list[Toleration]:
    """The tolerations every pod of the pod sets has: their templates' and the admission's
    (flavor tolerations, admission checks' updates), given in JSON form."""
    out: list[Toleration] = []
    for template in pod_set_templates:
        out.extend(tolerations_from((template.get("spec") or {}).get("tolerations")))
    out.extend(tolerations_from(list(extra)))
    return out


def verdict(
    node: Json | None, tolerations: Sequence[Toleration], pods_on_node: Iterable[Json]
) -> NodeVerdict:
    """The node's state for one workload (see module docstring)."""
    if node is None or not has_ready_condition(node):
        return NodeVerdict.FAILED
    if node_is_ready(node) and not failing_taints(node, tolerations):
        return NodeVerdict.HEALTHY
    if any(progressing(pod) for pod in pods_on_node):
        return NodeVerdict.HEALTHY
    return NodeVerdict.FAILED


def stranded_pods(node_name: str, pods: Iterable[Json]) -> list[Json]:
    """Pods pinned to the node by their selector, ungated, pending and not bound."""
    out = []
    for pod in pods:
        spec = pod.get("spec") or {}
        selector = spec.get("nodeSelector") or {}
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        if (
            selector.get(HOSTNAME_LABEL) == node_name
            and not spec.get("nodeName")
            and phase == "Pending"
            and not has_topology_gate(pod)
            and progressing(pod)
        ):
            out.append(pod)
    return out
