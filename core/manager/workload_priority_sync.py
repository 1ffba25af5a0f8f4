"""A WorkloadPriorityClass's new value, carried into every Workload that names the class.

As upstream's workloadpriorityclass_controller: when a class appears (a class deleted and
created again with another value) or its `value` changes, each Workload whose
`spec.priorityClassRef` names it (kind WorkloadPriorityClass) gets `spec.priority` set to
that value. The engine takes the spec change like any other: a pending Workload moves in
its queue, an admitted one is judged by its new priority when preemption looks at it.

Guarantees:
- only the leader writes (`run` is leader work); a follower's caches stay warm;
- idempotent: a Workload whose priority already matches is not written, so a repeat, a
  restart (the leader sweeps every class when it starts) or a stale event writes nothing;
- bounded: keys are Workloads in a work queue, and writes share one token bucket
  (`writes_per_second`, `burst`), so a class used by thousands of Workloads never crowds
  out admissions' status writes;
- safe against races: each write is a merge patch guarded by the resourceVersion read
  from the cache; a conflict is retried with backoff on the newer version.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from core.api.json_types import Json
from core.api.workload import PriorityClassGroup, PriorityClassKind
from core.kube.client import KubeClient, PatchType
from core.kube.errors import Conflict, NotFound
from core.kube.informer import EventHandlers
from core.kube.object_meta import name_of, namespace_of, object_key, resource_version_of
from core.kube.object_store import ObjectStore
from core.kube.rate_limit import TokenBucket
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.field_manager import FIELD_MANAGER

Store = ObjectStore[dict[str, Any]]

WORKLOAD_BY_PRIORITY_CLASS = "workloadPriorityClass"
DEFAULT_WRITES_PER_SECOND = 10.0
DEFAULT_BURST = 20


def workload_priority_class_index(obj: Json) -> Iterable[str]:
    """Index Workloads by the WorkloadPriorityClass their priorityClassRef names."""
    ref = (obj.get("spec") or {}).get("priorityClassRef") or {}
    if (
        ref.get("kind") == PriorityClassKind.WORKLOAD_PRIORITY_CLASS.value
        and ref.get("group", PriorityClassGroup.KUEUE.value) == PriorityClassGroup.KUEUE.value
        and ref.get("name")
    ):
        return (str(ref["name"]),)
    return ()


def class_name(workload: Json) -> str | None:
    """The WorkloadPriorityClass a Workload names, if it names one."""
    return next(iter(workload_priority_class_index(workload)), None)


def class_value(priority_class: Json | None) -> int | None:
    value = (priority_class or {}).get("value")
    return int(value) if isinstance(value, int) else None


class WorkloadPrioritySync:
    """Keeps `spec.priority` of Workloads equal to their WorkloadPriorityClass's value."""

    def __init__(
        self,
        client: KubeClient,
        *,
        priority_classes: Store,
        workloads: Store,
        writes_per_second: float = DEFAULT_WRITES_PER_SECOND,
        burst: int = DEFAULT_BURST,
    ) -> None:
        self.client = client
        self.priority_classes = priority_classes
        self.workloads = workloads
        self.budget = TokenBucket(writes_per_second, burst)
        self.queue: WorkQueue[str] = WorkQueue("workload-priority")
        self.writes = 0
        self.log = structlog.get_logger("core.manager.workload_priority")

    # -- triggers ------------------------------------------------------------------------
    def handlers(self) -> EventHandlers[dict[str, Any]]:
        """WorkloadPriorityClass events: a new class or a new value."""

        def updated(old: Json, new: Json) -> None:
            if class_value(old) != class_value(new):
                self.class_changed(name_of(new))

        return EventHandlers(
            on_add=lambda obj: self.class_changed(name_of(obj)),
            on_update=updated,
        )

    def class_changed(self, name: str) -> None:
        """Queue every Workload naming the class (cheap: an index lookup, no writes)."""
        for workload in self.workloads.by_index(WORKLOAD_BY_PRIORITY_CLASS, name):
            self.queue.add(object_key(workload))

    # -- reconcile -----------------------------------------------------------------------
    async def run(self, workers: int = 2) -> None:
        for priority_class in self.priority_classes:
            self.class_changed(name_of(priority_class))
        await self.queue.run_workers(self._reconcile_or_retry, workers)

    async def _reconcile_or_retry(self, key: str) -> None:
        try:
            await self.reconcile(key)
        except Conflict:
            self.queue.add_rate_limited(key)  # the cache was behind; try on the newer version

    def wanted_priority(self, workload: Json) -> int | None:
        """The value to write, or None when the Workload is already right (or has no class)."""
        name = class_name(workload)
        if name is None:
            return None
        value = class_value(self.priority_classes.get(name))
        if value is None or (workload.get("spec") or {}).get("priority") == value:
            return None
        return value

    async def reconcile(self, key: str) -> None:
        workload = self.workloads.get(key)
        if workload is None:
            return
        value = self.wanted_priority(workload)
        if value is None:
            return
        await self.budget.acquire()
        try:
            await self.client.patch(
                kinds.WORKLOADS,
                name_of(workload),
                {
                    "metadata": {"resourceVersion": resource_version_of(workload)},
                    "spec": {"priority": value},
                },
                patch_type=PatchType.MERGE,
                namespace=namespace_of(workload),
                field_manager=FIELD_MANAGER,
            )
        except NotFound:
            return
        self.writes += 1
        self.log.info(
            "workload.priority_updated",
            workload=key,
            priority_class=class_name(workload),
            priority=value,
        )
