"""Informer events of the queueing objects, turned into engine upserts and deletes.

ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses,
AdmissionChecks and Namespaces, the LimitRanges and RuntimeClasses that pods'
requests depend on, and for topology-aware scheduling Topologies, Nodes and the pods
bound to them (`core.adapters.node_manifests`), are translated by the adapters and
handed to the engine as they arrive, in any order (the engine tolerates references to
objects it has not seen yet). An object the adapter rejects is logged and reported as a
Warning Event on that object; the engine keeps the last good version (or none), so one
bad object never stops the feed or affects other queues.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from core.adapters import kueue_manifests as manifests
from core.adapters.node_manifests import node_from_manifest, non_tas_pod_usage
from core.api.json_types import Json
from core.kube.events import EventRecorder, EventType
from core.kube.informer import EventHandlers
from core.kube.object_meta import name_of, namespace_of
from core.kube.resources import ResourceRef
from core.manager import watched_kinds as kinds
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason, reference

# What a malformed manifest can raise on its way through the adapters.
TRANSLATION_ERRORS = (
    manifests.ManifestError,
    ValueError,
    KeyError,
    TypeError,
    msgspec.MsgspecError,
)


@dataclass(frozen=True, slots=True)
class _KindFeed:
    """How one kind reaches the engine."""

    resource: ResourceRef
    kind: str
    upsert: Callable[[Json], None]
    delete: Callable[[Json], None]


class ClusterObjectFeed:
    """Informer handlers for every non-Workload kind the engine needs."""

    def __init__(self, host: EngineHost, events: EventRecorder | None = None) -> None:
        self.host = host
        self.events = events
        # WorkloadPriorityClass values, for Workloads that name a class but no priority.
        self.priority_values: dict[str, int] = {}
        self.log = structlog.get_logger("core.manager.feed")
        engine = host.engine
        self._feeds = {
            "ResourceFlavor": _KindFeed(
                kinds.RESOURCE_FLAVORS,
                "ResourceFlavor",
                lambda o: engine.upsert_resource_flavor(manifests.resource_flavor_from_manifest(o)),
                lambda o: engine.delete_resource_flavor(name_of(o)),
            ),
            "Cohort": _KindFeed(
                kinds.COHORTS,
                "Cohort",
                lambda o: engine.upsert_cohort(manifests.cohort_from_manifest(o)),
                lambda o: engine.delete_cohort(name_of(o)),
            ),
            "ClusterQueue": _KindFeed(
                kinds.CLUSTER_QUEUES,
                "ClusterQueue",
                lambda o: engine.upsert_cluster_queue(manifests.cluster_queue_from_manifest(o)),
                lambda o: engine.delete_cluster_queue(name_of(o)),
            ),
            "LocalQueue": _KindFeed(
                kinds.LOCAL_QUEUES,
                "LocalQueue",
                lambda o: engine.upsert_local_queue(manifests.local_queue_from_manifest(o)),
                lambda o: engine.delete_local_queue(namespace_of(o), name_of(o)),
            ),
            "WorkloadPriorityClass": _KindFeed(
                kinds.WORKLOAD_PRIORITY_CLASSES,
                "WorkloadPriorityClass",
                self._upsert_priority_class,
                self._delete_priority_class,
            ),
            "AdmissionCheck": _KindFeed(
                kinds.ADMISSION_CHECKS,
                "AdmissionCheck",
                lambda o: engine.upsert_admission_check(manifests.admission_check_from_manifest(o)),
                lambda o: engine.delete_admission_check(name_of(o)),
            ),
            "Namespace": _KindFeed(
                kinds.NAMESPACES,
                "Namespace",
                lambda o: engine.upsert_namespace(manifests.namespace_from_manifest(o)),
                lambda o: engine.delete_namespace(name_of(o)),
            ),
            "LimitRange": _KindFeed(
                kinds.LIMIT_RANGES,
                "LimitRange",
                lambda o: engine.upsert_limit_range(manifests.limit_range_from_manifest(o)),
                lambda o: engine.delete_limit_range(namespace_of(o), name_of(o)),
            ),
            "RuntimeClass": _KindFeed(
                kinds.RUNTIME_CLASSES,
                "RuntimeClass",
                lambda o: engine.upsert_runtime_class(manifests.runtime_class_from_manifest(o)),
                lambda o: engine.delete_runtime_class(name_of(o)),
            ),
            "Topology": _KindFeed(
                kinds.TOPOLOGIES,
                "Topology",
                lambda o: engine.upsert_topology(manifests.topology_from_manifest(o)),
                lambda o: engine.delete_topology(name_of(o)),
            ),
            "Node": _KindFeed(
                kinds.NODES,
                "Node",
                lambda o: engine.upsert_node(node_from_manifest(o)),
                lambda o: engine.delete_node(name_of(o)),
            ),
            "Pod": _KindFeed(kinds.PODS, "Pod", self._upsert_pod, self._delete_pod),
        }

    @property
    def kinds(self) -> list[str]:
        return list(self._feeds)

    def handlers(self, kind: str) -> EventHandlers[dict[str, Any]]:
        feed = self._feeds[kind]
        return EventHandlers(
            on_add=lambda obj: self._upsert(feed, obj),
            on_update=lambda old, new: self._update(feed, old, new),
            on_delete=lambda obj: self._delete(feed, obj),
        )

    # -- priority classes ----------------------------------------------------------------
    def _upsert_priority_class(self, obj: Json) -> None:
        pc = manifests.priority_class_from_manifest(obj)
        self.priority_values[pc.name] = pc.value
        self.host.engine.upsert_priority_class(pc)

    def _delete_priority_class(self, obj: Json) -> None:
        self.priority_values.pop(name_of(obj), None)
        self.host.engine.delete_priority_class(name_of(obj))

    # -- pods outside TAS ----------------------------------------------------------------
    def _upsert_pod(self, obj: Json) -> None:
        key = f"{namespace_of(obj)}/{name_of(obj)}"
        usage = non_tas_pod_usage(obj)
        if usage is None:
            self.host.engine.delete_non_tas_pod(key)
        else:
            self.host.engine.upsert_non_tas_pod(key, usage[0], usage[1])

    def _delete_pod(self, obj: Json) -> None:
        self.host.engine.delete_non_tas_pod(f"{namespace_of(obj)}/{name_of(obj)}")

    # -- shared --------------------------------------------------------------------------
    def _upsert(self, feed: _KindFeed, obj: Json) -> None:
        try:
            feed.upsert(dict(obj, kind=feed.kind))
        except TRANSLATION_ERRORS as error:
            self._rejected(feed, obj, error)
            return
        self.host.cluster_objects_changed()

    def _update(self, feed: _KindFeed, old: Json, new: Json) -> None:
        if engine_view(feed.kind, old) != engine_view(feed.kind, new):
            self._upsert(feed, new)

    def _delete(self, feed: _KindFeed, obj: Json) -> None:
        feed.delete(obj)
        self.host.cluster_objects_changed()

    def _rejected(self, feed: _KindFeed, obj: Json, error: Exception) -> None:
        message = f"{feed.kind} {name_of(obj)} cannot be used: {error}"
        self.log.warning(
            "feed.invalid_object",
            kind=feed.kind,
            namespace=namespace_of(obj) or None,
            name=name_of(obj),
            error=str(error),
        )
        if self.events is not None:
            self.events.record(
                reference(obj, feed.resource, feed.kind),
                EventReason.INVALID_OBJECT,
                message,
                type=EventType.WARNING,
            )


def engine_view(kind: str, obj: Json) -> tuple[Any, ...]:
    """The parts of an object the engine reads: an update that leaves them alone (a status
    write, a label on a queue) is not worth an engine call and a scheduling cycle."""
    meta = obj.get("metadata") or {}
    if kind == "Namespace":
        return (meta.get("labels") or {},)
    if kind == "WorkloadPriorityClass":
        return (obj.get("value"),)
    if kind == "RuntimeClass":
        return (obj.get("overhead"),)
    if kind == "Node":
        node = node_from_manifest(obj)
        return (node.labels, node.taints, node.allocatable, node.ready, node.unschedulable)
    if kind == "Pod":
        return (non_tas_pod_usage(obj),)
    if kind == "AdmissionCheck":
        active = [
            c.get("status")
            for c in (obj.get("status") or {}).get("conditions") or ()
            if isinstance(c, Mapping) and c.get("type") == "Active"
        ]
        return (obj.get("spec"), active)
    return (obj.get("spec"), bool(meta.get("deletionTimestamp")))
