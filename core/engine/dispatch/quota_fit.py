"""Would a worker ClusterQueue admit the workload from unused nominal quota right now?

This mirrors how the worker's own scheduler picks flavors (see
`core.engine.flavor_assignment`), from what a capacity report carries: for each pod set
and each resource group it needs, the first flavor in the ClusterQueue's order that the
pods may use (taints tolerated, node selector and required affinity satisfied) and whose
nominal quota minus reserved quota covers the pod set, counting earlier pod sets of the
same workload. Borrowing and preemption are deliberately not counted: the capacity-aware
dispatcher only sends a workload where it fits without taking anything from anyone.

Resource groups are not in the report; they are recovered from it: every flavor of a group
lists the same resources (the report keeps zero quotas), and a resource belongs to one group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.engine.dispatch.capacity_snapshot import QueueSnapshot, ResourceAmounts
from core.engine.dispatch.fit_verdict import FitReason, quantity_text
from core.engine.model import PodSet, ResourceFlavor
from core.engine.node_matching import (
    first_untolerated_taint,
    flavor_affinity_matches,
    format_taint,
)

FlavorPlan = tuple[Mapping[str, str], ...]
"""Per pod set, in order: the flavor each requested resource would be assigned."""


@dataclass(frozen=True, slots=True)
class QuotaShortfall:
    reason: FitReason
    message: str


@dataclass(frozen=True, slots=True)
class _Group:
    covered: frozenset[str]
    flavors: tuple[str, ...]
    label_keys: frozenset[str]


def _groups(
    queue: QueueSnapshot, specs: Mapping[str, ResourceFlavor] | None
) -> tuple[list[_Group], dict[str, int]]:
    members: dict[frozenset[str], list[str]] = {}
    for flavor, nominal in queue.quota:
        members.setdefault(frozenset(nominal), []).append(flavor)
    groups: list[_Group] = []
    by_resource: dict[str, int] = {}
    for covered, flavors in members.items():
        keys: set[str] = set()
        for flavor in flavors:
            spec = None if specs is None else specs.get(flavor)
            if spec is not None:
                keys.update(spec.node_labels)
        for resource in covered:
            by_resource.setdefault(resource, len(groups))
        groups.append(_Group(covered, tuple(flavors), frozenset(keys)))
    return groups, by_resource


def _ineligibility(
    pod_set: PodSet, flavor: str, specs: Mapping[str, ResourceFlavor] | None, group: _Group
) -> str | None:
    """Why the pod set may not use `flavor`, as the worker would say it; None if it may.

    Without the worker's flavor definitions (`specs` None) every flavor is taken as
    eligible: the report alone cannot tell.
    """
    if specs is None:
        return None
    spec = specs.get(flavor)
    if spec is None:
        return f"flavor {flavor} not found"
    taint = first_untolerated_taint(spec.node_taints, (*pod_set.tolerations, *spec.tolerations))
    if taint is not None:
        return f"untolerated taint {format_taint(taint)} in flavor {flavor}"
    constrained = pod_set.node_selector or pod_set.required_node_affinity
    if constrained and not flavor_affinity_matches(
        pod_set.node_selector, pod_set.required_node_affinity, group.label_keys, spec.node_labels
    ):
        return f"flavor {flavor} doesn't match node affinity"
    return None


def _pick_flavor(
    pod_set: PodSet,
    group: _Group,
    requests: Mapping[str, int],
    queue: QueueSnapshot,
    nominal: Mapping[str, ResourceAmounts],
    claimed: Mapping[tuple[str, str], int],
    specs: Mapping[str, ResourceFlavor] | None,
) -> str | QuotaShortfall:
    mismatches: list[str] = []
    shortfalls: list[str] = []
    within_nominal = False
    for flavor in group.flavors:
        mismatch = _ineligibility(pod_set, flavor, specs, group)
        if mismatch is not None:
            mismatches.append(mismatch)
            continue
        missing = None
        fits_nominal = True
        for resource in sorted(requests):
            wanted = claimed.get((flavor, resource), 0) + requests[resource]
            quota = nominal[flavor].get(resource, 0)
            fits_nominal = fits_nominal and wanted <= quota
            unused = quota - queue.reserved(flavor, resource)
            if missing is None and wanted > unused:
                missing = (resource, wanted, quota, unused)
        if missing is None:
            return flavor
        within_nominal = within_nominal or fits_nominal
        resource, wanted, quota, unused = missing
        if wanted > quota:
            shortfalls.append(
                f"{resource} in flavor {flavor}: {quantity_text(resource, wanted)} needed,"
                f" nominal quota is {quantity_text(resource, quota)}"
            )
        else:
            shortfalls.append(
                f"insufficient unused quota for {resource} in flavor {flavor},"
                f" {quantity_text(resource, wanted - max(0, unused))} more needed"
            )
    if not shortfalls:
        return QuotaShortfall(FitReason.NO_ELIGIBLE_FLAVOR, "; ".join(mismatches))
    reason = (
        FitReason.INSUFFICIENT_UNUSED_QUOTA if within_nominal else FitReason.EXCEEDS_NOMINAL_QUOTA
    )
    return QuotaShortfall(reason, "; ".join(shortfalls))


def _pod_set_requests(pod_set: PodSet, covers_pods: bool) -> dict[str, int]:
    """What the whole pod set takes from quota: positive requests times count, and its pods
    when the ClusterQueue has a `pods` quota."""
    requests = {res: per_pod * pod_set.count for res, per_pod in pod_set.requests.items()}
    requests = {res: amount for res, amount in requests.items() if amount > 0}
    if covers_pods:
        requests["pods"] = pod_set.count
    return requests


def plan_usage(
    pod_sets: Sequence[PodSet], plan: FlavorPlan, queue: QueueSnapshot
) -> dict[str, dict[str, int]]:
    """The quota a workload admitted by `plan` would reserve: flavor → resource → amount."""
    covers_pods = any("pods" in nominal for _, nominal in queue.quota)
    usage: dict[str, dict[str, int]] = {}
    for pod_set, flavors in zip(pod_sets, plan, strict=True):
        for resource, amount in _pod_set_requests(pod_set, covers_pods).items():
            flavor = flavors.get(resource)
            if flavor is None:
                continue
            per_flavor = usage.setdefault(flavor, {})
            per_flavor[resource] = per_flavor.get(resource, 0) + amount
    return usage


def assign_flavors(
    pod_sets: Sequence[PodSet],
    queue: QueueSnapshot,
    flavor_specs: Mapping[str, ResourceFlavor] | None = None,
) -> FlavorPlan | QuotaShortfall:
    """The flavors the worker would assign from unused nominal quota, or why it cannot.

    `flavor_specs` are the worker's ResourceFlavors, when the caller knows them; they let
    node selectors, affinity and taints narrow the choice as they would on the worker.
    """
    groups, by_resource = _groups(queue, flavor_specs)
    nominal = dict(queue.quota)
    covers_pods = "pods" in by_resource
    claimed: dict[tuple[str, str], int] = {}
    plan: list[Mapping[str, str]] = []
    for pod_set in pod_sets:
        requests = _pod_set_requests(pod_set, covers_pods)
        chosen: dict[str, str] = {}
        for resource in sorted(requests):
            if resource in chosen:
                continue
            index = by_resource.get(resource)
            if index is None:
                return QuotaShortfall(
                    FitReason.RESOURCE_UNAVAILABLE,
                    f"pod set {pod_set.name}: resource {resource} unavailable in"
                    f" ClusterQueue {queue.name}",
                )
            group = groups[index]
            group_requests = {r: v for r, v in requests.items() if r in group.covered}
            outcome = _pick_flavor(
                pod_set, group, group_requests, queue, nominal, claimed, flavor_specs
            )
            if isinstance(outcome, QuotaShortfall):
                return QuotaShortfall(outcome.reason, f"pod set {pod_set.name}: {outcome.message}")
            for res, amount in group_requests.items():
                chosen[res] = outcome
                claimed[(outcome, res)] = claimed.get((outcome, res), 0) + amount
        plan.append({res: chosen[res] for res in sorted(chosen)})
    return tuple(plan)
