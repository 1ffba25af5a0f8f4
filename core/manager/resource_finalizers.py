"""`kueue.x-k8s.io/resource-in-use` on ClusterQueues, ResourceFlavors and AdmissionChecks.

As upstream: every live object of these kinds carries the finalizer; once it is being
deleted, the finalizer comes off only when nothing uses the object any more, so the
deletion completes then and not before. A ClusterQueue is in use while workloads hold
quota in it; a ResourceFlavor or an AdmissionCheck while some ClusterQueue (even one
being deleted) names it. The same finalizer on a Workload nobody owns is dropped when a
user deletes it (a Job's Workload is released by the Job controller instead). Keys are
(kind, name) in a work queue; reconciles read caches and the engine and write a
finalizer change guarded by resourceVersion.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from core.api.json_types import Json
from core.kube.client import KubeClient
from core.kube.errors import Conflict
from core.kube.informer import EventHandlers
from core.kube.object_meta import name_of, object_key
from core.kube.object_store import ObjectStore
from core.kube.resources import ResourceRef
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.engine_host import EngineHost
from core.manager.field_manager import FIELD_MANAGER
from core.manager.finalizers import is_deleting, set_finalizer
from integrations.framework.labels import RESOURCE_IN_USE_FINALIZER

Store = ObjectStore[dict[str, Any]]

CLUSTER_QUEUE = "ClusterQueue"
RESOURCE_FLAVOR = "ResourceFlavor"
ADMISSION_CHECK = "AdmissionCheck"
WORKLOAD = "Workload"


def flavors_named_by(cq: Json) -> set[str]:
    spec = cq.get("spec") or {}
    return {
        str(flavor.get("name"))
        for group in spec.get("resourceGroups") or ()
        for flavor in group.get("flavors") or ()
        if flavor.get("name")
    }


def checks_named_by(cq: Json) -> set[str]:
    strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
    return {
        str(rule.get("name")) for rule in strategy.get("admissionChecks") or () if rule.get("name")
    }


class ResourceInUseFinalizers:
    """The finalizer controller for the three cluster-scoped kinds (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        host: EngineHost,
        *,
        cluster_queues: Store,
        resource_flavors: Store,
        admission_checks: Store,
        workloads: Store,
    ) -> None:
        self.client = client
        self.host = host
        self.stores: dict[str, tuple[Store, ResourceRef]] = {
            CLUSTER_QUEUE: (cluster_queues, kinds.CLUSTER_QUEUES),
            RESOURCE_FLAVOR: (resource_flavors, kinds.RESOURCE_FLAVORS),
            ADMISSION_CHECK: (admission_checks, kinds.ADMISSION_CHECKS),
            WORKLOAD: (workloads, kinds.WORKLOADS),
        }
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue("resource-finalizers")
        host.add_listener(self)

    # -- triggers ------------------------------------------------------------------------
    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        def changed(obj: Json) -> None:
            meta = obj.get("metadata") or {}
            if is_deleting(obj) and not meta.get("ownerReferences"):
                self.queue.add((WORKLOAD, object_key(obj)))

        return EventHandlers(on_add=changed, on_update=lambda _old, new: changed(new))

    def handlers(self, kind: str) -> EventHandlers[dict[str, Any]]:
        def changed(obj: Json) -> None:
            self.queue.add((kind, name_of(obj)))
            if kind == CLUSTER_QUEUE:
                self._references_changed(obj)

        def updated(old: Json, new: Json) -> None:
            changed(old)  # a ClusterQueue may have stopped naming a flavor or a check
            changed(new)

        return EventHandlers(on_add=changed, on_update=updated, on_delete=changed)

    def _references_changed(self, cq: Json) -> None:
        for flavor in flavors_named_by(cq):
            self.queue.add((RESOURCE_FLAVOR, flavor))
        for check in checks_named_by(cq):
            self.queue.add((ADMISSION_CHECK, check))

    def workloads_changed(self, keys: Collection[str]) -> None:
        return None

    def queues_touched(self, cluster_queues: Collection[str] | None) -> None:
        store = self.stores[CLUSTER_QUEUE][0]
        names: Iterable[str] = store.keys() if cluster_queues is None else cluster_queues
        for name in names:
            cq = store.get(name)
            if cq is not None and is_deleting(cq):
                self.queue.add((CLUSTER_QUEUE, name))

    # -- reconcile -----------------------------------------------------------------------
    async def run(self, workers: int = 2) -> None:
        for kind, (store, _) in self.stores.items():
            if kind == WORKLOAD:
                continue  # only deletions matter; their events queue them
            names = store.keys()
            for name in names:
                self.queue.add((kind, name))
        await self.queue.run_workers(self._reconcile_or_retry, workers)

    async def _reconcile_or_retry(self, key: tuple[str, str]) -> None:
        try:
            await self.reconcile(key)
        except Conflict:
            self.queue.add_rate_limited(key)  # the cache was behind; try on the newer version

    def in_use(self, kind: str, name: str) -> bool:
        if kind == CLUSTER_QUEUE:
            status = self.host.engine.cluster_queue_status(name)
            return status is not None and status.reserving_workloads > 0
        cluster_queues = self.stores[CLUSTER_QUEUE][0]
        named_by = flavors_named_by if kind == RESOURCE_FLAVOR else checks_named_by
        return any(name in named_by(cq) for cq in cluster_queues)

    async def reconcile(self, key: tuple[str, str]) -> None:
        kind, name = key
        store, resource = self.stores[kind]
        obj = store.get(name)
        if obj is None:
            return
        if kind == WORKLOAD:
            if is_deleting(obj) and not (obj.get("metadata") or {}).get("ownerReferences"):
                await self._drop(resource, obj)
            return
        if not is_deleting(obj):
            await set_finalizer(
                self.client,
                resource,
                obj,
                RESOURCE_IN_USE_FINALIZER,
                present=True,
                field_manager=FIELD_MANAGER,
            )
        elif not self.in_use(kind, name):
            await self._drop(resource, obj)

    async def _drop(self, resource: ResourceRef, obj: Json) -> None:
        await set_finalizer(
            self.client,
            resource,
            obj,
            RESOURCE_IN_USE_FINALIZER,
            present=False,
            field_manager=FIELD_MANAGER,
        )
