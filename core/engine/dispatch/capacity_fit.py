"""Does a workload fit one worker right now, judged from that worker's capacity report?

A worker fits when both hold:
(a) the ClusterQueue behind the worker's LocalQueue of the workload's queue name can admit
    the whole workload from unused nominal quota (`quota_fit`), and
(b) every pod finds a node with room for it among the nodes of the flavor it would get
    (`node_packing`), and
(c) a pod set with a required topology (`podset-required-topology`) fits whole in one
    reported domain of that level of its TAS flavor: one node for the hostname level,
    else one of the domains the report lists for the level (the largest ones).
Without a fresh report the answer is "unknown", never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.api.topology import HOSTNAME_LABEL
from core.engine.dispatch.capacity_snapshot import (
    MAX_REPORT_AGE_SECONDS,
    CapacitySnapshot,
    FlavorSnapshot,
)
from core.engine.dispatch.fit_verdict import FitReason, FitVerdict, WorkerFit, quantity_text
from core.engine.dispatch.node_packing import PackingShortfall, PodGroup, pack
from core.engine.dispatch.quota_fit import QuotaShortfall, assign_flavors
from core.engine.model import PodSet, ResourceFlavor


def _describe(requests: Mapping[str, int]) -> str:
    return ", ".join(f"{r}: {quantity_text(r, v)}" for r, v in sorted(requests.items()))


def _no_room(worker: str, flavor: str, shortfall: PackingShortfall) -> WorkerFit:
    return WorkerFit(
        worker=worker,
        verdict=FitVerdict.DOES_NOT_FIT,
        reason=FitReason.INSUFFICIENT_NODE_CAPACITY,
        message=(
            f"pod set {shortfall.pod_set}: no node in flavor {flavor} has room for"
            f" another pod ({_describe(shortfall.requests)}); {shortfall.placed} of"
            f" {shortfall.count} pods placed"
        ),
    )


def pods_by_flavor(
    pod_sets: Sequence[PodSet], plan: Sequence[Mapping[str, str]]
) -> dict[str, list[PodGroup]]:
    """The pods each flavor's nodes must take.

    A pod set whose resources come from two flavors (two resource groups) must land on a
    node carrying both flavors' labels; the report cannot intersect node sets, so such
    pods are packed, whole, against each of their flavors: necessary, if not sufficient.
    """
    out: dict[str, list[PodGroup]] = {}
    for pod_set, flavors in zip(pod_sets, plan, strict=True):
        group = PodGroup(pod_set=pod_set.name, requests=pod_set.requests, count=pod_set.count)
        for flavor in sorted(set(flavors.values())):
            out.setdefault(flavor, []).append(group)
    return out


def assess_worker(
    pod_sets: Sequence[PodSet],
    *,
    worker: str,
    snapshot: CapacitySnapshot | None,
    cluster_queue: str | None,
    now: float,
    flavor_specs: Mapping[str, ResourceFlavor] | None = None,
    max_age: float = MAX_REPORT_AGE_SECONDS,
) -> WorkerFit:
    """The verdict on one worker for a workload made of `pod_sets`.

    `cluster_queue` is the ClusterQueue the worker's LocalQueue (same namespace and name as
    the workload's queue) points to, or None when the worker has no such LocalQueue.
    `flavor_specs` are the worker's ResourceFlavors when known (see `assign_flavors`).
    `now` is seconds since the epoch, compared with the report's observedTime.
    """
    if snapshot is None:
        return WorkerFit(
            worker=worker,
            verdict=FitVerdict.UNKNOWN,
            reason=FitReason.NO_REPORT,
            message="no capacity report from the worker",
        )
    if not snapshot.is_fresh(now, max_age):
        age = (
            "never observed"
            if snapshot.observed_at is None
            else (f"{now - snapshot.observed_at:.0f}s old")
        )
        state = "" if snapshot.reporting else "agent not reporting, "
        return WorkerFit(
            worker=worker,
            verdict=FitVerdict.UNKNOWN,
            reason=FitReason.STALE_REPORT,
            message=f"capacity report is stale ({state}{age}, limit {max_age:.0f}s)",
        )
    if cluster_queue is None:
        return WorkerFit(
            worker=worker,
            verdict=FitVerdict.DOES_NOT_FIT,
            reason=FitReason.NO_LOCAL_QUEUE,
            message="the worker has no LocalQueue of the workload's queue name",
        )
    queue = snapshot.cluster_queues.get(cluster_queue)
    if queue is None:
        truncated = snapshot.cluster_queues_truncated
        return WorkerFit(
            worker=worker,
            verdict=FitVerdict.UNKNOWN if truncated else FitVerdict.DOES_NOT_FIT,
            reason=(
                FitReason.CLUSTER_QUEUE_NOT_REPORTED if truncated else FitReason.NO_CLUSTER_QUEUE
            ),
            message=f"ClusterQueue {cluster_queue} is not in the worker's report",
        )
    plan = assign_flavors(pod_sets, queue, flavor_specs)
    if isinstance(plan, QuotaShortfall):
        return WorkerFit(
            worker=worker,
            verdict=FitVerdict.DOES_NOT_FIT,
            reason=plan.reason,
            message=f"ClusterQueue {cluster_queue}: {plan.message}",
        )
    for flavor, groups in sorted(pods_by_flavor(pod_sets, plan).items()):
        capacity = snapshot.flavors.get(flavor)
        if capacity is None or capacity.node_count == 0:
            return WorkerFit(
                worker=worker,
                verdict=FitVerdict.DOES_NOT_FIT,
                reason=FitReason.NO_NODES,
                message=f"flavor {flavor} has no ready, schedulable nodes on the worker",
            )
        shortfall = pack(groups, capacity)
        if shortfall is not None:
            return _no_room(worker, flavor, shortfall)
    misfit = _topology_misfit(worker, pod_sets, plan, snapshot)
    if misfit is not None:
        return misfit
    return WorkerFit(worker=worker, verdict=FitVerdict.FITS, flavors=plan)


def _domains_of(capacity: FlavorSnapshot, level: str) -> tuple[FlavorSnapshot, ...] | None:
    """The candidate domains of a level: single nodes for the hostname, else as reported;
    None when the flavor has no such level on the worker."""
    if level == HOSTNAME_LABEL:
        return tuple(
            FlavorSnapshot(name=capacity.name, node_count=1, free=b, blocks=(b,))
            for b in capacity.blocks
        )
    if capacity.topology_name is None:
        return None
    return capacity.domains.get(level)


def _topology_misfit(
    worker: str,
    pod_sets: Sequence[PodSet],
    plan: Sequence[Mapping[str, str]],
    snapshot: CapacitySnapshot,
) -> WorkerFit | None:
    for pod_set, flavors in zip(pod_sets, plan, strict=True):
        request = pod_set.topology_request
        if request is None or request.required is None:
            continue
        level = request.required
        group = PodGroup(pod_set=pod_set.name, requests=pod_set.requests, count=pod_set.count)
        for flavor in sorted(set(flavors.values())):
            capacity = snapshot.flavors.get(flavor)
            if capacity is None:
                continue
            domains = _domains_of(capacity, level)
            if domains is None:
                return WorkerFit(
                    worker=worker,
                    verdict=FitVerdict.DOES_NOT_FIT,
                    reason=FitReason.NO_TOPOLOGY_LEVEL,
                    message=(
                        f"pod set {pod_set.name}: flavor {flavor} has no topology level"
                        f" {level} on the worker"
                    ),
                )
            if not any(pack([group], domain) is None for domain in domains):
                return WorkerFit(
                    worker=worker,
                    verdict=FitVerdict.DOES_NOT_FIT,
                    reason=FitReason.TOPOLOGY_DOMAIN_TOO_SMALL,
                    message=(
                        f"pod set {pod_set.name}: no {level} domain of flavor {flavor} has"
                        f" room for its {pod_set.count} pods"
                    ),
                )
    return None
