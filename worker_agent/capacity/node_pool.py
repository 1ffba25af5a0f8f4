"""Which of the worker's nodes stand behind a ResourceFlavor, as the hub should count them.

A node counts for a flavor when pods admitted with that flavor could be scheduled there:

- it is Ready and not cordoned (`spec.unschedulable`), so new pods can start on it;
- it carries every one of the flavor's `nodeLabels` (the selector Kueue injects);
- each of its NoSchedule/NoExecute taints is either one the flavor declares in
  `nodeTaints` (workloads must tolerate those to get the flavor at all) or tolerated by
  the flavor's `tolerations` (which Kueue adds to admitted pods).

A node may count for several flavors (a flavor without labels matches every node); each
flavor is a view of the cluster, not a partition of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.adapters.node_manifests import node_accepts_pods, taints_from
from core.api.json_types import Json
from core.api.resource_flavor import ResourceFlavor as ApiResourceFlavor
from core.engine.model import ResourceFlavor, Taint, TaintEffect, Toleration
from core.engine.node_matching import tolerates
from core.engine.quantity import to_base_units


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """What the report needs of one node, in engine base units."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)


def node_view(node: Json) -> NodeView:
    metadata = node.get("metadata") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return NodeView(
        name=metadata.get("name", ""),
        labels=dict(metadata.get("labels") or {}),
        taints=taints_from((node.get("spec") or {}).get("taints") or ()),
        allocatable={r: to_base_units(r, q) for r, q in sorted(allocatable.items())},
    )


def usable_nodes(nodes: Iterable[Json]) -> list[NodeView]:
    """The nodes new pods can start on, sorted by name."""
    return sorted((node_view(n) for n in nodes if node_accepts_pods(n)), key=lambda n: n.name)


def engine_flavor(flavor: ApiResourceFlavor) -> ResourceFlavor:
    """The typed API ResourceFlavor in the engine's terms (labels, taints, tolerations)."""
    spec = flavor.spec
    return ResourceFlavor(
        name=flavor.metadata.name,
        node_labels=dict(spec.node_labels),
        node_taints=taints_from(
            {"key": t.key, "value": t.value, "effect": t.effect} for t in spec.node_taints
        ),
        tolerations=tuple(
            Toleration(
                key=t.key,
                operator=t.operator or "Equal",
                value=t.value,
                effect=t.effect,
                toleration_seconds=t.toleration_seconds,
            )
            for t in spec.tolerations
        ),
        topology_name=spec.topology_name,
    )


def serves_flavor(node: NodeView, flavor: ResourceFlavor) -> bool:
    """Whether pods admitted with `flavor` could be scheduled on `node` (see module doc)."""
    for key, value in flavor.node_labels.items():
        if node.labels.get(key) != value:
            return False
    for taint in node.taints:
        if taint.effect is TaintEffect.PREFER_NO_SCHEDULE or taint in flavor.node_taints:
            continue
        if not any(tolerates(t, taint) for t in flavor.tolerations):
            return False
    return True
