"""Keep manager ClusterQueues' quotas equal to their workers' (`plan` says what is wanted).

Runs only with the `MultiKueueManagerQuotaAutomation` gate on, as upstream. A ClusterQueue
is reconciled when its spec changes (or our condition is missing from it), when a
LocalQueue pointing at it comes or goes, when a MultiKueue AdmissionCheck, config or
cluster changes, when a worker connects or disconnects, and every `resync_seconds`: the
hub does not watch workers' queues, so a change of a worker's quota is seen by the next
resync (upstream watches them; a LIST of LocalQueues and ClusterQueues per worker and
resync is what this costs instead, shared by the automated queues reconciled together).
The spec write carries the resourceVersion read, so a concurrent edit makes it retry
rather than be overwritten.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog

from core.api.admission_check import AdmissionCheck
from core.api.cluster_queue import ClusterQueueConditionType
from core.api.codec import to_builtins
from core.api.kube_time import format_time
from core.api.multikueue import MULTIKUEUE_CONFIG_KIND, MULTIKUEUE_CONTROLLER_NAME, MultiKueueConfig
from core.api.registry import kind_info
from core.kube.client import KubeClient, PatchType
from core.kube.errors import NotFound
from core.kube.informer import EventHandlers, Informer
from core.kube.micro_time import utc_now
from core.kube.workqueue import WorkQueue
from core.manager.field_manager import MULTIKUEUE_FIELD_MANAGER
from core.manager.queue_status import merge_conditions, queue_status_patch
from hub.multikueue.connections.cluster_list_reference import cluster_list_reference
from hub.multikueue.connections.cluster_lists import ClusterLists
from hub.multikueue.connections.registry import WorkerRegistry
from hub.multikueue.connections.worker_events import (
    WorkerConnected,
    WorkerDisconnected,
    WorkerEvent,
)
from hub.multikueue.quota_automation.plan import (
    QuotaPlan,
    WantedCondition,
    WorkerQueues,
    aggregate,
    plan_quotas,
    precondition,
)

Json = dict[str, Any]
CLUSTER_QUEUES = kind_info("ClusterQueue")
LOCAL_QUEUES = kind_info("LocalQueue")
CONDITION = ClusterQueueConditionType.MULTIKUEUE_MANAGER_QUOTA_AUTOMATION.value
DEFAULT_RESYNC_SECONDS = 15.0
REMOTE_LIST_TIMEOUT_SECONDS = 10.0
WORKER_LIST_REUSE_SECONDS = 2.0
"""A resync reconciles every automated queue at once: they share one pair of LISTs per
worker instead of each making its own."""


def _condition_of(cq: Json) -> Json | None:
    for condition in (cq.get("status") or {}).get("conditions") or ():
        if condition.get("type") == CONDITION:
            return dict(condition)
    return None


def conditions_with(cq: Json, wanted: WantedCondition | None, now: datetime) -> list[Json] | None:
    """The queue's conditions with ours set to `wanted` (removed if None); None: unchanged.
    Merged as the queue status writer merges its own (`merge_conditions`), so neither
    drops the other's condition and a held status keeps its transition time."""
    status = cq.get("status") or {}
    current = [dict(c) for c in status.get("conditions") or ()]
    if wanted is None:
        others = [c for c in current if c.get("type") != CONDITION]
        return None if len(others) == len(current) else others
    condition = {
        "type": CONDITION,
        "status": wanted.status.value,
        "reason": wanted.reason,
        "message": wanted.message,
        "lastTransitionTime": format_time(now),
    }
    merged = merge_conditions(status, [condition], (cq.get("metadata") or {}).get("generation"))
    return None if queue_status_patch(status, {"conditions": merged}) is None else merged


class QuotaAutomationController:
    """See the module docstring."""

    def __init__(
        self,
        client: KubeClient,
        checks: Informer[AdmissionCheck],
        configs: Informer[MultiKueueConfig],
        lists: ClusterLists,
        registry: WorkerRegistry,
        *,
        resync_seconds: float = DEFAULT_RESYNC_SECONDS,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.client = client
        self.checks = checks
        self.configs = configs
        self.lists = lists
        self.registry = registry
        self.resync_seconds = resync_seconds
        self._listed: dict[str, tuple[float, WorkerQueues]] = {}
        """Worker → (when read, monotonic; its queues)."""
        self.wall_clock = wall_clock
        self.cluster_queues: Informer[Json] = Informer(client, CLUSTER_QUEUES, into=dict)
        self.local_queues: Informer[Json] = Informer(client, LOCAL_QUEUES, into=dict)
        self.queue: WorkQueue[str] = WorkQueue("multikueue-quota-automation")
        self.log = structlog.get_logger("hub.multikueue").bind(controller="quota-automation")
        self.cluster_queues.add_handlers(
            EventHandlers(
                on_add=lambda cq: self.queue.add(_name(cq)),
                on_update=self._cluster_queue_updated,
            )
        )
        self.local_queues.add_handlers(
            EventHandlers(
                on_add=self._local_queue_changed,
                on_update=self._local_queue_moved,
                on_delete=self._local_queue_changed,
            )
        )
        checks.add_handlers(
            EventHandlers(
                on_add=lambda _: self._enqueue_all(),
                on_update=lambda _, __: self._enqueue_all(),
                on_delete=lambda _: self._enqueue_all(),
            )
        )
        lists.subscribe(lambda _: self._enqueue_all())
        registry.subscribe(self._worker_event)

    def informers(self) -> tuple[Informer[Json], Informer[Json]]:
        return (self.cluster_queues, self.local_queues)

    async def run(self) -> None:
        """Reconcile until cancelled (the caches must be running and synced)."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.queue.run_workers(self.reconcile), name="quota-automation")
            group.create_task(self._resync(), name="quota-automation-resync")

    async def _resync(self) -> None:
        while True:
            self._enqueue_all()
            await asyncio.sleep(self.resync_seconds)

    def _enqueue_all(self) -> None:
        for cq in self.cluster_queues.store.list():
            self.queue.add(_name(cq))

    def _worker_event(self, event: WorkerEvent) -> None:
        if isinstance(event, WorkerConnected | WorkerDisconnected):
            self._enqueue_all()

    def _cluster_queue_updated(self, old: Json, new: Json) -> None:
        generation = lambda cq: (cq.get("metadata") or {}).get("generation")  # noqa: E731
        if generation(old) != generation(new) or _condition_of(old) != _condition_of(new):
            self.queue.add(_name(new))

    def _local_queue_moved(self, old: Json, new: Json) -> None:
        self._local_queue_changed(old)
        self._local_queue_changed(new)

    def _local_queue_changed(self, lq: Json) -> None:
        target = (lq.get("spec") or {}).get("clusterQueue")
        if target:
            self.queue.add(str(target))

    def _multikueue_check(self, cq: Json) -> AdmissionCheck | None:
        strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
        for rule in strategy.get("admissionChecks") or ():
            check = self.checks.store.get(str(rule.get("name")))
            if check is not None and check.spec.controller_name == MULTIKUEUE_CONTROLLER_NAME:
                return check
        return None

    async def reconcile(self, name: str) -> None:
        cq = self.cluster_queues.store.get(name)
        if cq is None:
            return
        plan = await self.plan(cq)
        if plan.resource_groups is not None:
            await self._write_quotas(cq, plan)
        await self._write_condition(cq, plan.condition)

    async def plan(self, cq: Json) -> QuotaPlan:
        check = self._multikueue_check(cq)
        ref = None if check is None else cluster_list_reference(check)
        is_config = ref is not None and ref.kind == MULTIKUEUE_CONFIG_KIND
        config = self.configs.store.get(ref.name) if ref is not None and is_config else None
        early = precondition(
            has_multikueue_check=check is not None,
            config=None if config is None else to_builtins(config),
            is_config=is_config or ref is None,
            cluster_queue=cq,
        )
        if early is not None:
            return early
        assert ref is not None
        resolved = self.lists.resolve(ref)
        clusters = () if resolved is None else resolved.clusters
        feeding = [
            (str((lq.get("metadata") or {}).get("namespace")), _name(lq))
            for lq in self.local_queues.store.list()
            if (lq.get("spec") or {}).get("clusterQueue") == _name(cq)
        ]
        workers = [
            w for w in await asyncio.gather(*(self._worker_queues(c) for c in clusters)) if w
        ]
        return plan_quotas(cq, aggregate(feeding, workers))

    async def _worker_queues(self, cluster: str) -> WorkerQueues | None:
        """The worker's queues; None when it is not connected (left out, as upstream)."""
        connection = self.registry.connection(cluster)
        client = None if connection is None or not connection.connected else connection.client
        if client is None:
            return None
        read = self._listed.get(cluster)
        if read is not None and time.monotonic() - read[0] < WORKER_LIST_REUSE_SECONDS:
            return read[1]
        async with asyncio.timeout(REMOTE_LIST_TIMEOUT_SECONDS):
            local_queues, _ = await client.list_all(LOCAL_QUEUES, into=dict)
            cluster_queues, _ = await client.list_all(CLUSTER_QUEUES, into=dict)
        queues = WorkerQueues(
            local_queues={
                (str((lq.get("metadata") or {}).get("namespace")), _name(lq)): str(
                    (lq.get("spec") or {}).get("clusterQueue") or ""
                )
                for lq in local_queues
            },
            cluster_queues={_name(q): q for q in cluster_queues},
        )
        self._listed[cluster] = (time.monotonic(), queues)
        return queues

    async def _write_quotas(self, cq: Json, plan: QuotaPlan) -> None:
        metadata = cq.get("metadata") or {}
        await self.client.patch(
            CLUSTER_QUEUES,
            _name(cq),
            {
                "metadata": {"resourceVersion": metadata.get("resourceVersion")},
                "spec": {"resourceGroups": plan.resource_groups},
            },
            patch_type=PatchType.MERGE,
            field_manager=MULTIKUEUE_FIELD_MANAGER,
        )
        self.log.info("multikueue.quota_automated", cluster_queue=_name(cq))

    async def _write_condition(self, cq: Json, wanted: WantedCondition | None) -> None:
        conditions = conditions_with(cq, wanted, self.wall_clock())
        if conditions is None:
            return
        try:
            await self.client.patch(
                CLUSTER_QUEUES,
                _name(cq),
                {"status": {"conditions": conditions}},
                patch_type=PatchType.MERGE,
                subresource="status",
                field_manager=MULTIKUEUE_FIELD_MANAGER,
            )
        except NotFound:
            return


def _name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
