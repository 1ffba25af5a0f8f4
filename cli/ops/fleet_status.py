"""What `fleetq status` shows, gathered: each worker's connection and capacity, each queue.

Workers come from the manager's MultiKueueClusters (their Active condition is the hub's
verdict). Capacity comes from the worker itself: its WorkerCapacity report, read through
the kubeconfig Secret the hub uses, a few workers at a time and each with a short timeout;
a worker that does not answer gets an "unreachable" entry instead of stalling the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import msgspec

from cli.join.cluster_rest import ApiCallError, ClusterCallError, ClusterRest, Unreachable
from cli.ops.kueue_reads import list_objects
from cli.ops.worker_access import WorkerAccessError, worker_rest
from core.api.cluster_queue import ClusterQueue
from core.api.local_queue import LocalQueue
from core.api.meta import Condition
from core.api.multikueue import MultiKueueCluster
from core.api.registry import kind_info
from core.api.worker_capacity import WorkerCapacity

PARALLEL_WORKERS = 8
"""Workers read at the same time (each read is one GET with a short timeout)."""


class WorkerReachability(msgspec.Struct, rename="camel"):
    """Whether the CLI could read the worker's capacity report, and if not, why."""

    reachable: bool
    problem: str = ""
    """Short form for a table cell: unreachable, BadKubeConfig, no report..."""
    detail: str = ""
    """The full message."""


class FlavorCapacityView(msgspec.Struct, kw_only=True, rename="camel"):
    flavor: str
    nodes: int
    allocatable: dict[str, str]
    requested: dict[str, str]
    free: dict[str, str]


class WorkerView(msgspec.Struct, kw_only=True, rename="camel"):
    name: str
    active: str
    """The MultiKueueCluster's Active status: True, False or Unknown (no condition yet)."""
    reason: str
    message: str
    reachability: WorkerReachability
    last_report: datetime | None = None
    report_age_seconds: int | None = None
    flavors: list[FlavorCapacityView] = []


class QuotaUse(msgspec.Struct, kw_only=True, rename="camel"):
    flavor: str
    resource: str
    used: str
    quota: str


class ClusterQueueView(msgspec.Struct, kw_only=True, rename="camel"):
    name: str
    cohort: str
    stop_policy: str
    active: str
    """The Active condition's reason (Ready, Stopped, FlavorNotFound...) or Unknown."""
    pending: int
    reserving: int
    admitted: int
    usage: list[QuotaUse]


class LocalQueueView(msgspec.Struct, kw_only=True, rename="camel"):
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str
    pending: int
    reserving: int
    admitted: int


class FleetStatus(msgspec.Struct, kw_only=True, rename="camel"):
    workers: list[WorkerView]
    cluster_queues: list[ClusterQueueView]
    local_queues: list[LocalQueueView]


def gather_status(
    manager: ClusterRest,
    *,
    namespace: str | None,
    hub_namespace: str,
    now: datetime,
    open_worker: Callable[[ClusterRest, MultiKueueCluster, str], ClusterRest] = worker_rest,
) -> FleetStatus:
    """Read everything `fleetq status` shows (LocalQueues of `namespace`, None: all)."""
    clusters = sorted(list_objects(manager, MultiKueueCluster), key=lambda c: c.metadata.name)
    queues = sorted(list_objects(manager, ClusterQueue), key=lambda q: q.metadata.name)
    local_queues = sorted(
        list_objects(manager, LocalQueue, namespace),
        key=lambda q: (q.metadata.namespace, q.metadata.name),
    )

    def one_worker(cluster: MultiKueueCluster) -> WorkerView:
        return worker_view(cluster, read_report(manager, cluster, hub_namespace, open_worker), now)

    with ThreadPoolExecutor(max_workers=PARALLEL_WORKERS) as pool:
        workers = list(pool.map(one_worker, clusters))
    return FleetStatus(
        workers=workers,
        cluster_queues=[cluster_queue_view(queue) for queue in queues],
        local_queues=[local_queue_view(queue) for queue in local_queues],
    )


def read_report(
    manager: ClusterRest,
    cluster: MultiKueueCluster,
    hub_namespace: str,
    open_worker: Callable[[ClusterRest, MultiKueueCluster, str], ClusterRest] = worker_rest,
) -> WorkerCapacity | WorkerReachability:
    """The worker's capacity report, or why there is none."""
    from hub.multikueue.dispatch.capacity_view import pick_report

    try:
        rest = open_worker(manager, cluster, hub_namespace)
    except WorkerAccessError as error:
        return WorkerReachability(False, error.cell, str(error))
    try:
        reports = list_capacity_reports(rest)
    except Unreachable as error:
        return WorkerReachability(False, "unreachable", str(error))
    except ApiCallError as error:
        if error.status == 404:
            return WorkerReachability(
                True, "no report", "the worker has no WorkerCapacity API (no fleetq agent?)"
            )
        return WorkerReachability(True, f"HTTP {error.status}", str(error))
    except ClusterCallError as error:
        return WorkerReachability(False, "unreachable", str(error))
    finally:
        rest.close()
    report = pick_report(reports, cluster.metadata.name)
    if report is None:
        return WorkerReachability(
            True, "no report", f"the worker holds {len(reports)} reports, none for this cluster"
        )
    return report


def list_capacity_reports(rest: ClusterRest) -> list[WorkerCapacity]:
    from core.api.codec import decode_list

    answer = rest.request("GET", kind_info(WorkerCapacity).path())
    return list(decode_list(WorkerCapacity, answer).items)


def worker_view(
    cluster: MultiKueueCluster, report: WorkerCapacity | WorkerReachability, now: datetime
) -> WorkerView:
    active = find_condition(cluster.status.conditions, "Active")
    view = WorkerView(
        name=cluster.metadata.name,
        active=active.status.value if active else "Unknown",
        reason=active.reason if active else "",
        message=active.message if active else "",
        reachability=report if isinstance(report, WorkerReachability) else WorkerReachability(True),
    )
    if isinstance(report, WorkerCapacity):
        observed = report.status.observed_time
        view.last_report = observed
        view.report_age_seconds = int((now - observed).total_seconds()) if observed else None
        view.flavors = [
            FlavorCapacityView(
                flavor=flavor.name,
                nodes=flavor.node_count,
                allocatable={k: str(v) for k, v in flavor.allocatable.items()},
                requested={k: str(v) for k, v in flavor.requested.items()},
                free={k: str(v) for k, v in flavor.free.items()},
            )
            for flavor in report.status.flavors
        ]
    return view


def cluster_queue_view(queue: ClusterQueue) -> ClusterQueueView:
    active = find_condition(queue.status.conditions, "Active")
    used = {
        (flavor.name, resource.name): str(resource.total)
        for flavor in queue.status.flavors_usage
        for resource in flavor.resources
    }
    usage = [
        QuotaUse(
            flavor=flavor.name,
            resource=resource.name,
            used=used.get((flavor.name, resource.name), "0"),
            quota=str(resource.nominal_quota),
        )
        for group in queue.spec.resource_groups
        for flavor in group.flavors
        for resource in flavor.resources
    ]
    return ClusterQueueView(
        name=queue.metadata.name,
        cohort=queue.spec.cohort_name,
        stop_policy=queue.spec.stop_policy.value,
        active=active.reason if active else "Unknown",
        pending=queue.status.pending_workloads,
        reserving=queue.status.reserving_workloads,
        admitted=queue.status.admitted_workloads,
        usage=usage,
    )


def local_queue_view(queue: LocalQueue) -> LocalQueueView:
    return LocalQueueView(
        namespace=queue.metadata.namespace,
        name=queue.metadata.name,
        cluster_queue=queue.spec.cluster_queue,
        stop_policy=queue.spec.stop_policy.value,
        pending=queue.status.pending_workloads,
        reserving=queue.status.reserving_workloads,
        admitted=queue.status.admitted_workloads,
    )


def find_condition(conditions: list[Condition], kind: str) -> Condition | None:
    for condition in conditions:
        if condition.type == kind:
            return condition
    return None
