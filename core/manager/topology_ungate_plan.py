"""Which gated pods of a TAS-admitted Workload go to which topology domain, as upstream's
topology ungater decides it (pure: Workload and pod dicts in, a list of ungates out).

A pod of a pod set whose admission carries a `topologyAssignment` is created with the
`kueue.x-k8s.io/topology` scheduling gate. Each domain of the assignment should end up
with exactly its count of pods; a pod belongs to the domain whose level labels its
`nodeSelector` names. The plan is derived from the pods alone, so it is the same after a
restart and repeating it changes nothing:

- by rank: when the pod set names a pod index label (an Indexed Job's completion index,
  a JobSet's job index as the sub-group) and every pod carries a usable index, pod `r`
  goes to the domain holding rank `r` (domains in assignment order, each taking as many
  ranks as its count), as long as no ungated pod contradicts that order;
- otherwise greedily: each domain takes gated pods (by name) until it has its count,
  counting pods already ungated into it.

A pod set group (a LeaderWorkerSet's leader and workers) ranks the leader first and the
workers after it. While a node is listed in `status.unhealthyNodes` no pod is ungated
onto it (it waits for the replacement domain). Finished pods are not counted: they are
being replaced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from core.adapters.topology_encoding import TopologyAssignmentError, decode
from core.api.json_types import Json
from core.engine.model import TopologyAssignment
from core.manager.workload_decisions import condition_true
from integrations.framework.labels import POD_SET_LABEL, TOPOLOGY_SCHEDULING_GATE

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
POD_INDEX_OFFSET_ANNOTATION: Final = "kueue.x-k8s.io/pod-index-offset"
_FINISHED: Final = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Ungate:
    """Lift the topology gate of one pod and pin it to its domain's level labels."""

    pod: Json
    node_selector: dict[str, str]


def has_topology_gate(pod: Json) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(isinstance(g, Mapping) and g.get("name") == TOPOLOGY_SCHEDULING_GATE for g in gates)


def is_finished(pod: Json) -> bool:
    return (pod.get("status") or {}).get("phase") in _FINISHED


def admitted_by_tas(workload: Json) -> bool:
    """Admitted, with a topology assignment for some pod set (upstream's IsAdmittedByTAS)."""
    status = workload.get("status") or {}
    if not condition_true(status, "Admitted"):
        return False
    assignments = (status.get("admission") or {}).get("podSetAssignments") or ()
    return any(isinstance(a, Mapping) and a.get("topologyAssignment") for a in assignments)


def unhealthy_nodes(workload: Json) -> set[str]:
    nodes = (workload.get("status") or {}).get("unhealthyNodes") or ()
    return {str(n.get("name")) for n in nodes if isinstance(n, Mapping) and n.get("name")}


def node_of_domain(levels: Sequence[str], values: Sequence[str]) -> str | None:
    """The node a domain is, when its lowest level is the hostname."""
    if levels and levels[-1] == HOSTNAME_LABEL and len(values) == len(levels):
        return values[-1]
    return None


def _domain_of_pod(levels: Sequence[str], pod: Json) -> tuple[str, ...]:
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return tuple(str(selector.get(level, "")) for level in levels)


def _rank_offsets(
    assignments: Sequence[Json], requests: Mapping[str, Json]
) -> tuple[dict[str, int], dict[str, int]]:
    """Rank offset and rank bound per pod set; a group's smaller pod set (the leader) first."""
    groups: dict[str, list[Json]] = {}
    for index, psa in enumerate(assignments):
        name = str(psa.get("name"))
        group = (requests.get(name) or {}).get("podSetGroupName") or str(index)
        groups.setdefault(str(group), []).append(psa)
    offsets: dict[str, int] = {}
    bounds: dict[str, int] = {}
    for members in groups.values():
        if len(members) > 1:
            smaller, larger = members[0], members[1]
            if int(smaller.get("count") or 0) > int(larger.get("count") or 0):
                smaller, larger = larger, smaller
            small_count = int(smaller.get("count") or 0)
            offsets[str(smaller.get("name"))] = 0
            offsets[str(larger.get("name"))] = small_count
            bounds[str(smaller.get("name"))] = small_count
            bounds[str(larger.get("name"))] = int(larger.get("count") or 0) + small_count
        else:
            offsets[str(members[0].get("name"))] = 0
            bounds[str(members[0].get("name"))] = int(members[0].get("count") or 0)
    return offsets, bounds


def _rank_domains(assignment: TopologyAssignment) -> list[tuple[str, ...]]:
    ranks: list[tuple[str, ...]] = []
    for domain in assignment.domains:
        ranks.extend([domain.values] * domain.count)
    return ranks


def _label_int_below(pod: Json, label: str, bound: int) -> int | None:
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(label)
    if value is None or not str(value).isdigit():
        return None
    number = int(value)
    return number if number < bound else None


def _ranks(
    pods: Sequence[Json], request: Json, count: int, offset: int, bound: int
) -> dict[int, Json] | None:
    """Rank per pod from the pod index label, or None when ranks cannot be used."""
    index_label = request.get("podIndexLabel")
    if not index_label:
        return None
    sub_label = request.get("subGroupIndexLabel")
    sub_count = int(request.get("subGroupCount") or 0)
    if sub_label and sub_count <= 0:
        return None
    single_job = count // sub_count if sub_label else count
    result: dict[int, Json] = {}
    for pod in pods:
        index = _label_int_below(pod, str(index_label), bound)
        if index is None:
            return None
        rank = index - offset
        if sub_label:
            job = _label_int_below(pod, str(sub_label), sub_count)
            if job is None or index >= single_job:
                return None
            rank = index + job * single_job - offset
        if rank < 0 or rank >= count or rank in result:
            return None
        result[rank] = pod
    return result


def _by_rank(
    assignment: TopologyAssignment, ranked: Mapping[int, Json]
) -> list[tuple[Json, tuple[str, ...]]] | None:
    domains = _rank_domains(assignment)
    out: list[tuple[Json, tuple[str, ...]]] = []
    for rank in sorted(ranked):
        pod = ranked[rank]
        if rank >= len(domains):
            return None  # fewer assigned pods than the pod set: ranks cannot place them
        if not has_topology_gate(pod):
            if _domain_of_pod(assignment.levels, pod) != domains[rank]:
                return None  # a running pod contradicts the rank order
            continue
        out.append((pod, domains[rank]))
    return out


def _greedy(
    assignment: TopologyAssignment, pods: Sequence[Json]
) -> list[tuple[Json, tuple[str, ...]]]:
    gated = [pod for pod in pods if has_topology_gate(pod)]
    ungated: dict[tuple[str, ...], int] = {}
    for pod in pods:
        if not has_topology_gate(pod):
            values = _domain_of_pod(assignment.levels, pod)
            ungated[values] = ungated.get(values, 0) + 1
    out: list[tuple[Json, tuple[str, ...]]] = []
    for domain in assignment.domains:
        missing = max(domain.count - ungated.get(domain.values, 0), 0)
        take = gated[len(out) : len(out) + missing]
        out.extend((pod, domain.values) for pod in take)
    return out


def _pod_name(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def plan_ungates(workload: Json, pods: Sequence[Json]) -> list[Ungate]:
    """The pods to ungate now and each one's node selector (see module docstring).

    `pods` are the Workload's pods (any pod set); a topology assignment that cannot be
    decoded plans nothing for its pod set (the Workload's validation reports it)."""
    if not admitted_by_tas(workload):
        return []
    status = workload.get("status") or {}
    assignments = [
        a
        for a in (status.get("admission") or {}).get("podSetAssignments") or ()
        if isinstance(a, Mapping)
    ]
    requests: dict[str, Json] = {
        str(ps.get("name", "main")): ps.get("topologyRequest") or {}
        for ps in (workload.get("spec") or {}).get("podSets") or ()
        if isinstance(ps, Mapping)
    }
    offsets, bounds = _rank_offsets(assignments, requests)
    bad_nodes = unhealthy_nodes(workload)
    plan: list[Ungate] = []
    for psa in assignments:
        encoded = psa.get("topologyAssignment")
        if not encoded:
            continue
        try:
            assignment = decode(encoded)
        except TopologyAssignmentError:
            continue
        name = str(psa.get("name"))
        members = sorted(
            (
                p
                for p in pods
                if ((p.get("metadata") or {}).get("labels") or {}).get(POD_SET_LABEL) == name
                and not is_finished(p)
            ),
            key=_pod_name,
        )
        if not members:
            continue
        offset, bound = offsets.get(name, 0), bounds.get(name, 0)
        extra = ((members[0].get("metadata") or {}).get("annotations") or {}).get(
            POD_INDEX_OFFSET_ANNOTATION
        )
        if extra is not None and str(extra).lstrip("-").isdigit():
            offset, bound = offset + int(extra), bound + int(extra)
        count = int(psa.get("count") or sum(d.count for d in assignment.domains))
        ranked = _ranks(members, requests.get(name) or {}, count, offset, bound)
        chosen = _by_rank(assignment, ranked) if ranked is not None else None
        if chosen is None:
            chosen = _greedy(assignment, members)
        for pod, values in chosen:
            node = node_of_domain(assignment.levels, values)
            if node is not None and node in bad_nodes:
                continue
            plan.append(Ungate(pod, dict(zip(assignment.levels, values, strict=True))))
    return plan


def ungate_patch(pod: Json, node_selector: Mapping[str, str]) -> dict[str, Any]:
    """A merge patch lifting the topology gate and adding the node selector, guarded by
    the pod's resourceVersion (a pod changed since it was read is not patched blindly)."""
    gates = [
        g
        for g in (pod.get("spec") or {}).get("schedulingGates") or ()
        if not (isinstance(g, Mapping) and g.get("name") == TOPOLOGY_SCHEDULING_GATE)
    ]
    return {
        "metadata": {"resourceVersion": (pod.get("metadata") or {}).get("resourceVersion")},
        "spec": {"schedulingGates": gates or None, "nodeSelector": dict(node_selector)},
    }
