"""What the pods on each node request, as kube-scheduler counts it.

A pod occupies its node from the moment it is bound (`spec.nodeName`) until it finishes
(phase Succeeded or Failed); a pod being deleted still holds its room until it is gone.
Each pod's requests are its effective requests (`core.engine.pod_templates.pod_requests`:
init containers, sidecars, overhead, pod-level resources), plus one `pods` slot.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.api.json_types import Json
from core.engine.pod_templates import pod_requests

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


def occupied_node(pod: Json) -> str | None:
    """The node the pod holds room on, if any."""
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return None
    return (pod.get("spec") or {}).get("nodeName") or None


def requested_per_node(pods: Iterable[Json]) -> dict[str, dict[str, int]]:
    """Summed requests (engine base units, with `pods`) of the pods on each node."""
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        node = occupied_node(pod)
        if node is None:
            continue
        total = out.setdefault(node, {})
        for resource, amount in pod_requests(pod.get("spec") or {}).items():
            total[resource] = total.get(resource, 0) + amount
        total["pods"] = total.get("pods", 0) + 1
    return out
