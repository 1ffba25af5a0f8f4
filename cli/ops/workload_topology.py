"""Where topology-aware scheduling placed a Workload's pods, for `fleetq describe workload`.

The stored `topologyAssignment` is upstream's compact encoding; it is decoded into one
row per domain (its label values per level, and the pod count), pod set by pod set. A
placement the worker still has to make (`delayedTopologyRequest: Pending`, under
MultiKueue) and failed nodes awaiting replacement (`status.unhealthyNodes`) are shown too.
"""

from __future__ import annotations

import msgspec

from core.adapters.topology_encoding import TopologyAssignmentError, decode
from core.api.codec import to_builtins
from core.api.workload import Workload


class TopologyDomainView(msgspec.Struct, kw_only=True, rename="camel"):
    values: list[str]
    pods: int


class PodSetTopologyView(msgspec.Struct, kw_only=True, rename="camel"):
    pod_set: str
    levels: list[str] = []
    domains: list[TopologyDomainView] = []
    delayed: str = ""
    """`Pending` while the placement is left to a later stage (the worker)."""
    error: str = ""


def topology_views(workload: Workload) -> list[PodSetTopologyView]:
    """One view per pod set the admission placed (or deferred) by topology."""
    admission = workload.status.admission
    if admission is None:
        return []
    out = []
    for psa in admission.pod_set_assignments:
        if psa.topology_assignment is None:
            if psa.delayed_topology_request is not None:
                out.append(
                    PodSetTopologyView(pod_set=psa.name, delayed=psa.delayed_topology_request.value)
                )
            continue
        try:
            assignment = decode(to_builtins(psa.topology_assignment))
        except TopologyAssignmentError as error:
            out.append(PodSetTopologyView(pod_set=psa.name, error=str(error)))
            continue
        out.append(
            PodSetTopologyView(
                pod_set=psa.name,
                levels=list(assignment.levels),
                domains=[
                    TopologyDomainView(values=list(d.values), pods=d.count)
                    for d in assignment.domains
                ],
            )
        )
    return out


def unhealthy_node_names(workload: Workload) -> list[str]:
    return [node.name for node in workload.status.unhealthy_nodes]


def topology_lines(views: list[PodSetTopologyView]) -> list[str]:
    """Human lines: `main: kubernetes.io/hostname=n1 (2 pods), ...`."""
    lines = []
    for view in views:
        if view.error:
            lines.append(f"{view.pod_set}: unreadable topologyAssignment ({view.error})")
        elif view.delayed:
            lines.append(f"{view.pod_set}: placement {view.delayed} (made where it runs)")
        else:
            domains = ", ".join(
                f"{'/'.join(d.values)} ({d.pods} pod{'s' if d.pods != 1 else ''})"
                for d in view.domains
            )
            lines.append(f"{view.pod_set}: {' / '.join(view.levels)}: {domains}")
    return lines
