"""The concurrent-admission controller: a parent's variant Workloads, one per flavor.

Runs only with the ConcurrentAdmission gate. For a Workload queued (through its LocalQueue)
to a ClusterQueue with a `concurrentAdmissionPolicy`, that is no variant itself, not
finished and not being deleted, a reconcile reads the caches and writes only the
difference:
- the parent gets the `kueue.x-k8s.io/concurrent-admission-parent: "true"` label;
- each flavor of the queue's first resource group without a variant gets one: the
  parent's spec, labels (but the parent label) and annotations, plus
  `kueue.x-k8s.io/workload-allowed-resource-flavors: <flavor>`, controlled by the parent
  (so the garbage collector deletes it with the parent), named as upstream names it;
- a variant of a flavor the queue no longer has is deleted.
What happens to the family afterwards (which variant is admitted, the parent carrying its
admission, migration, deactivation) is the engine's (`core.engine.variant_family`); its
outcome reaches the objects through the status writer. A queue whose policy cannot be
acted on (not exactly one resource group) gets a Warning event on each parent, and no
variants. Reconciles are idempotent: a create that already happened is AlreadyExists.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

import structlog

from core.api import concurrent_admission as marks
from core.api.json_types import Json
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, Conflict, NotFound
from core.kube.events import EventRecorder, EventType
from core.kube.informer import EventHandlers
from core.kube.object_meta import make_key, name_of, namespace_of, object_key, uid_of
from core.kube.object_store import ObjectStore
from core.kube.workqueue import WorkQueue
from core.manager import watched_kinds as kinds
from core.manager.event_reasons import EventReason, reference
from core.manager.field_manager import FIELD_MANAGER
from core.manager.finalizers import is_deleting
from core.manager.workload_decisions import condition_of

Store = ObjectStore[dict[str, Any]]
VARIANTS_INDEX = "concurrent-admission-variants-of"
_HASH_LENGTH = 5
_MAX_NAME_LENGTH = 63


def variant_name(parent_name: str, parent_uid: str, flavor: str) -> str:
    """Upstream's variant name: the parent's name without its hash, `-variant-<flavor>`,
    cut to fit, then five hex digits hashing the parent (a Workload) and the flavor."""
    base = parent_name.rsplit("-", 1)[0] if "-" in parent_name else parent_name
    prefix = f"{base}-variant-{flavor}"[: _MAX_NAME_LENGTH - 1 - _HASH_LENGTH]
    parts = [marks.WORKLOAD_KIND, "kueue.x-k8s.io", parent_name, parent_uid, flavor]
    digest = hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def variant_of_index(obj: Json) -> Iterable[str]:
    """Index Workloads by their parent's key (variants only)."""
    parent = marks.parent_name(obj)
    return (make_key(namespace_of(obj), parent),) if parent is not None else ()


def build_variant(parent: Json, flavor: str) -> Json:
    """A variant of `parent` allowed only `flavor` (see module docstring)."""
    meta = parent.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != marks.PARENT_LABEL}
    annotations = dict(meta.get("annotations") or {})
    annotations[marks.ALLOWED_FLAVORS_ANNOTATION] = flavor
    return {
        "apiVersion": marks.WORKLOAD_API_VERSION,
        "kind": marks.WORKLOAD_KIND,
        "metadata": {
            "name": variant_name(name_of(parent), uid_of(parent), flavor),
            "namespace": namespace_of(parent),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": marks.WORKLOAD_API_VERSION,
                    "kind": marks.WORKLOAD_KIND,
                    "name": name_of(parent),
                    "uid": uid_of(parent),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(parent.get("spec") or {}),
    }


def policy_flavors(cluster_queue: Json) -> tuple[list[str] | None, str | None]:
    """The flavors to have variants for, or why the queue's policy cannot be acted on;
    (None, None): the queue has no policy."""
    spec = cluster_queue.get("spec") or {}
    if not spec.get("concurrentAdmissionPolicy"):
        return None, None
    groups = spec.get("resourceGroups") or []
    if len(groups) != 1:
        return None, (
            f"ClusterQueue {name_of(cluster_queue)}: concurrentAdmissionPolicy needs exactly "
            f"one resource group, found {len(groups)}; no variants are created"
        )
    return [str(f.get("name")) for f in groups[0].get("flavors") or () if f.get("name")], None


class VariantController:
    """Keeps each parent's variants (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        events: EventRecorder,
        *,
        workloads: Store,
        local_queues: Store,
        cluster_queues: Store,
    ) -> None:
        self.client = client
        self.events = events
        self.workloads = workloads
        self.local_queues = local_queues
        self.cluster_queues = cluster_queues
        self.queue: WorkQueue[str] = WorkQueue("concurrent-admission")
        self.log = structlog.get_logger("core.manager.concurrent_admission")
        workloads.add_indexer(VARIANTS_INDEX, variant_of_index)

    # -- triggers ------------------------------------------------------------------------
    def workload_handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(
            on_add=self._workload_changed,
            on_update=lambda _old, new: self._workload_changed(new),
            on_delete=self._workload_changed,
        )

    def _workload_changed(self, obj: Json) -> None:
        parent = marks.parent_name(obj)
        self.queue.add(make_key(namespace_of(obj), parent) if parent else object_key(obj))

    def cluster_queue_handlers(self) -> EventHandlers[dict[str, Any]]:
        def updated(old: Json, new: Json) -> None:
            if _variant_shape(old) != _variant_shape(new):
                self._queue_parents_of(name_of(new))

        return EventHandlers(
            on_add=lambda obj: self._queue_parents_of(name_of(obj)), on_update=updated
        )

    def _queue_parents_of(self, cluster_queue: str) -> None:
        for workload in self.workloads:
            if self._cluster_queue_name(workload) == cluster_queue:
                self.queue.add(object_key(workload))

    async def run(self, workers: int = 4) -> None:
        for workload in self.workloads:
            self.queue.add(object_key(workload))
        await self.queue.run_workers(self._reconcile_or_retry, workers)

    async def _reconcile_or_retry(self, key: str) -> None:
        try:
            await self.reconcile(key)
        except Conflict:
            self.queue.add_rate_limited(key)

    # -- reconcile -----------------------------------------------------------------------
    def _cluster_queue_name(self, workload: Json) -> str | None:
        queue = (workload.get("spec") or {}).get("queueName")
        if not queue:
            return None
        local_queue = self.local_queues.get(make_key(namespace_of(workload), str(queue)))
        if local_queue is None:
            return None
        return (local_queue.get("spec") or {}).get("clusterQueue") or None

    async def reconcile(self, key: str) -> None:
        parent = self.workloads.get(key)
        if parent is None or marks.parent_name(parent) is not None or is_deleting(parent):
            return
        finished = condition_of(parent.get("status") or {}, Cond.FINISHED) or {}
        if finished.get("status") == "True":
            return
        cq_name = self._cluster_queue_name(parent)
        cluster_queue = self.cluster_queues.get(cq_name) if cq_name else None
        if cluster_queue is None:
            return
        flavors, problem = policy_flavors(cluster_queue)
        if problem is not None:
            self.events.record(
                reference(parent, kinds.WORKLOADS, marks.WORKLOAD_KIND),
                EventReason.INVALID_OBJECT,
                problem,
                type=EventType.WARNING,
            )
            return
        if flavors is None:
            return
        if not marks.is_labelled_parent(parent):
            await self._label(parent)
        variants = self.workloads.by_index(VARIANTS_INDEX, key)
        have: dict[str, Json] = {}
        for variant in variants:
            allowed = marks.allowed_flavors(variant) or ()
            ref = marks.parent_ref(variant)
            if ref is None or ref[1] != uid_of(parent):
                continue  # a variant of an earlier parent of the same name: the GC's
            if not allowed or allowed[0] not in flavors:
                await self._delete(variant)
            else:
                have[allowed[0]] = variant
        for flavor in flavors:
            if flavor not in have:
                await self._create(parent, flavor)

    async def _label(self, parent: Json) -> None:
        try:
            await self.client.patch(
                kinds.WORKLOADS,
                name_of(parent),
                {"metadata": {"labels": {marks.PARENT_LABEL: marks.PARENT_LABEL_VALUE}}},
                namespace=namespace_of(parent),
                field_manager=FIELD_MANAGER,
            )
        except NotFound:
            return

    async def _create(self, parent: Json, flavor: str) -> None:
        variant = build_variant(parent, flavor)
        try:
            await self.client.create(
                kinds.WORKLOADS,
                variant,
                namespace=namespace_of(parent),
                field_manager=FIELD_MANAGER,
            )
        except AlreadyExists:
            return
        self.log.info(
            "concurrent_admission.created_variant",
            parent=object_key(parent),
            variant=variant["metadata"]["name"],
            flavor=flavor,
        )
        self.events.record(
            reference(parent, kinds.WORKLOADS, marks.WORKLOAD_KIND),
            EventReason.CREATED_VARIANT,
            f'Variant Workload "{namespace_of(parent)}/{variant["metadata"]["name"]}" created',
        )

    async def _delete(self, variant: Json) -> None:
        try:
            await self.client.delete(
                kinds.WORKLOADS,
                name_of(variant),
                namespace=namespace_of(variant),
                precondition_uid=uid_of(variant) or None,
            )
        except NotFound:
            return
        self.log.info("concurrent_admission.deleted_variant", variant=object_key(variant))


def _variant_shape(cluster_queue: Json) -> tuple[Any, ...]:
    """What of a ClusterQueue decides its parents' variants: the policy and flavor names."""
    spec = cluster_queue.get("spec") or {}
    groups = tuple(
        tuple(str(f.get("name")) for f in group.get("flavors") or ())
        for group in spec.get("resourceGroups") or ()
    )
    return (bool(spec.get("concurrentAdmissionPolicy")), groups)
