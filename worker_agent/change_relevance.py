"""Which Node and Pod updates can change the capacity report, so the rest cost nothing.

Kubelets and controllers update nodes and pods all the time (heartbeats, conditions,
container statuses); almost none of it moves a number in the report. The publisher
rebuilds only when an update touches what `worker_agent.capacity` reads: for a node its
labels, taints, cordon, allocatable and Ready status; for a pod its node, its phase and
its spec (requests can be resized in place).
"""

from __future__ import annotations

from typing import Any

from core.adapters.node_manifests import node_accepts_pods
from core.api.json_types import Json


def _node_facts(node: Json) -> tuple[Any, ...]:
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    return (
        metadata.get("labels"),
        spec.get("taints"),
        node_accepts_pods(node),
        status.get("allocatable"),
    )


def node_change_matters(old: Json, new: Json) -> bool:
    """Whether a Node update can change the report."""
    return _node_facts(old) != _node_facts(new)


def pod_change_matters(old: Json, new: Json) -> bool:
    """Whether a Pod update can change the report."""
    return (old.get("spec") != new.get("spec")) or (
        (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase")
    )
