"""Reconcile MultiKueue AdmissionChecks: Active from their cluster list and its clusters' health.

Only checks whose controllerName is `kueue.x-k8s.io/multikueue` are touched. Their
parameters name a MultiKueueConfig (upstream's) or a MultiKueueClusterSet (fleetq's, for
more than 20 clusters); both are judged alike. The check is `Active` when every listed
cluster is Active, still True (`SomeActiveClusters`) when some are, and False
(`NoUsableClusters`) when none are, naming the missing and the inactive ones; parameters
that do not reference an existing config or set, or a set that cannot be used (an invalid
selector), make it False `BadConfig`; a set that holds no cluster is `NoUsableClusters`.
Reasons and messages are upstream's. A check is reconciled again when it changes, when
its list's clusters change (a set's members follow cluster labels), and when the Active
condition of one of those clusters changes; a cluster's Active is read from its status,
the same source upstream and every user looks at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.codec import to_builtins
from core.api.meta import ConditionStatus
from core.api.multikueue import MULTIKUEUE_CONTROLLER_NAME, MultiKueueCluster
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.kube.informer import EventHandlers, Informer
from core.kube.micro_time import utc_now
from core.kube.status_writer import write_status
from core.kube.workqueue import WorkQueue
from core.manager.field_manager import MULTIKUEUE_FIELD_MANAGER
from hub.multikueue.connections.active_condition import (
    ACTIVE,
    CHECK_ACTIVE_MESSAGE,
    ActiveState,
    CheckActiveReason,
    find_condition,
    go_list,
    with_condition,
)
from hub.multikueue.connections.cluster_list_reference import (
    ClusterListRef,
    cluster_list_reference,
    parameters_problem,
)
from hub.multikueue.connections.cluster_lists import ClusterLists, Resolution
from hub.multikueue.connections.cluster_set_members import empty_set_message

ADMISSION_CHECKS = kind_info("AdmissionCheck")
CHECKS_BY_LIST = "multikueue-cluster-list"
BAD_CONFIG_PREFIX = "Cannot load the AdmissionChecks parameters: "

ListLookup = Callable[[ClusterListRef], Resolution | None]
ClusterLookup = Callable[[str], MultiKueueCluster | None]


def _bad_config(problem: str) -> ActiveState:
    return ActiveState(
        ConditionStatus.FALSE, CheckActiveReason.BAD_CONFIG, BAD_CONFIG_PREFIX + problem
    )


def check_active_state(
    check: AdmissionCheck, lists: ListLookup, clusters: ClusterLookup
) -> ActiveState:
    """The Active condition a MultiKueue check should carry (pure; see module docstring)."""
    problem = parameters_problem(check)
    ref = cluster_list_reference(check)
    if problem is not None or ref is None:
        return _bad_config(str(problem))
    resolved = lists(ref)
    if resolved is None:
        return _bad_config(f'{ref.kind}.{ref.group} "{ref.name}" not found')
    if resolved.problem is not None:
        return _bad_config(f'{ref.kind}.{ref.group} "{ref.name}": {resolved.problem}')
    if not resolved.clusters:
        return ActiveState(
            ConditionStatus.FALSE, CheckActiveReason.NO_USABLE_CLUSTERS, empty_set_message(ref.name)
        )
    missing: list[str] = []
    inactive: list[str] = []
    for cluster_name in resolved.clusters:
        cluster = clusters(cluster_name)
        if cluster is None:
            missing.append(cluster_name)
        elif not cluster_is_active(cluster):
            inactive.append(cluster_name)
    if not missing and not inactive:
        return ActiveState(ConditionStatus.TRUE, CheckActiveReason.ACTIVE, CHECK_ACTIVE_MESSAGE)
    parts = []
    if missing:
        parts.append(f"Missing clusters: {go_list(missing)}")
    if inactive:
        parts.append(f"Inactive clusters: {go_list(inactive)}")
    message = ", ".join(parts)
    if len(missing) + len(inactive) < len(resolved.clusters):
        return ActiveState(ConditionStatus.TRUE, CheckActiveReason.SOME_ACTIVE_CLUSTERS, message)
    return ActiveState(ConditionStatus.FALSE, CheckActiveReason.NO_USABLE_CLUSTERS, message)


def cluster_is_active(cluster: MultiKueueCluster) -> bool:
    condition = find_condition(cluster.status.conditions, ACTIVE)
    return condition is not None and condition.status is ConditionStatus.TRUE


def _active_summary(cluster: MultiKueueCluster) -> tuple[str, str, str] | None:
    condition = find_condition(cluster.status.conditions, ACTIVE)
    if condition is None:
        return None
    return (condition.status.value, condition.reason, condition.message)


def checks_by_list_index(check: AdmissionCheck) -> Iterable[str]:
    """Index MultiKueue checks by the config or set they reference."""
    if check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME:
        return ()
    ref = cluster_list_reference(check)
    return () if ref is None else (ref.key,)


class AdmissionCheckController:
    """Keeps the Active condition of MultiKueue AdmissionChecks current."""

    def __init__(
        self,
        client: KubeClient,
        checks: Informer[AdmissionCheck],
        lists: ClusterLists,
        clusters: Informer[MultiKueueCluster],
        *,
        wall_clock: Callable[[], datetime] = utc_now,
        workers: int = 1,
    ) -> None:
        self.client = client
        self.checks = checks
        self.lists = lists
        self.clusters = clusters
        self.wall_clock = wall_clock
        self.workers = workers
        self.queue: WorkQueue[str] = WorkQueue("multikueue-admission-checks")
        self.log = structlog.get_logger("hub.multikueue").bind(controller="multikueue-check")
        checks.store.add_indexer(CHECKS_BY_LIST, checks_by_list_index)
        checks.add_handlers(
            EventHandlers(
                on_add=self._enqueue_check,
                on_update=lambda _, new: self._enqueue_check(new),
            )
        )
        lists.subscribe(self._enqueue_list_users)
        clusters.add_handlers(
            EventHandlers(
                on_add=self._enqueue_cluster_users,
                on_update=self._cluster_updated,
                on_delete=self._enqueue_cluster_users,
            )
        )

    async def run(self) -> None:
        try:
            await self.queue.run_workers(self.reconcile, self.workers)
        finally:
            self.queue.shut_down()

    async def reconcile(self, name: str) -> None:
        check = self.checks.store.get(name)
        if check is None or check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME:
            return
        wanted = check_active_state(check, self.lists.resolve, self.clusters.store.get)

        def compute(current: AdmissionCheck) -> dict[str, Any] | None:
            conditions = with_condition(
                current.status.conditions,
                wanted,
                generation=current.metadata.generation,
                now=self.wall_clock(),
            )
            if conditions is None:
                return None
            return {"conditions": [to_builtins(condition) for condition in conditions]}

        try:
            result = await write_status(
                self.client,
                ADMISSION_CHECKS,
                check,
                compute,
                into=AdmissionCheck,
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return
        if result.written:
            self.log.info(
                "multikueue.check_condition",
                check=name,
                status=wanted.status.value,
                reason=wanted.reason,
                message=wanted.message,
            )

    # -- event handlers --------------------------------------------------------------

    def _enqueue_check(self, check: AdmissionCheck) -> None:
        if check.spec.controller_name == MULTIKUEUE_CONTROLLER_NAME:
            self.queue.add(check.metadata.name)

    def _enqueue_list_users(self, ref: ClusterListRef) -> None:
        for key in self.checks.store.index_keys(CHECKS_BY_LIST, ref.key):
            self.queue.add(key)

    def _enqueue_cluster_users(self, cluster: MultiKueueCluster) -> None:
        for ref in self.lists.lists_holding(cluster.metadata.name):
            self._enqueue_list_users(ref)

    def _cluster_updated(self, old: MultiKueueCluster, new: MultiKueueCluster) -> None:
        if _active_summary(old) != _active_summary(new):
            self._enqueue_cluster_users(new)
