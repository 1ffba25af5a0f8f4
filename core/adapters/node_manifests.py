"""Nodes and pods (core/v1 dicts) in the engine's terms, for topology-aware scheduling.

A Node gives TAS its labels (the topology levels), taints, allocatable and whether new
pods may start on it (Ready and not cordoned). A pod uses node capacity outside TAS when
it is bound to a node, not finished, and carries none of the podset topology annotations
(pods of TAS workloads are counted from their Workloads' topology assignments instead,
as upstream's non-TAS usage cache decides).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.api.json_types import Json
from core.engine.model import Node, Taint, TaintEffect
from core.engine.pod_templates import pod_requests
from core.engine.quantity import to_base_units

_EFFECTS = {effect.value: effect for effect in TaintEffect}

# Upstream's IsTAS(pod): any of these annotations makes a pod TAS-managed.
TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
_FINISHED = ("Succeeded", "Failed")


def taints_from(items: Iterable[Json]) -> tuple[Taint, ...]:
    """spec.taints (or a flavor's nodeTaints); unknown effects are left out."""
    out = []
    for item in items:
        effect = _EFFECTS.get(item.get("effect", ""))
        if effect is not None:
            out.append(Taint(key=item.get("key", ""), value=item.get("value") or "", effect=effect))
    return tuple(out)


def node_is_ready(node: Json) -> bool:
    """Its Ready condition is True."""
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def node_accepts_pods(node: Json) -> bool:
    """Ready (condition True) and not cordoned."""
    return not (node.get("spec") or {}).get("unschedulable") and node_is_ready(node)


def node_from_manifest(obj: Json) -> Node:
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    allocatable = (obj.get("status") or {}).get("allocatable") or {}
    return Node(
        name=str(metadata.get("name", "")),
        labels=dict(metadata.get("labels") or {}),
        allocatable={r: to_base_units(r, q) for r, q in sorted(allocatable.items())},
        taints=taints_from(spec.get("taints") or ()),
        ready=node_is_ready(obj),
        unschedulable=bool(spec.get("unschedulable")),
    )


def is_tas_pod(pod: Json) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(key in annotations for key in TAS_POD_ANNOTATIONS)


def non_tas_pod_usage(pod: Json) -> tuple[str, dict[str, int]] | None:
    """(node name, requests) of a pod that uses node capacity outside TAS, else None."""
    spec = pod.get("spec") or {}
    node_name = spec.get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    if not node_name or phase in _FINISHED or is_tas_pod(pod):
        return None
    return str(node_name), pod_requests(spec)
