"""The manager's informers: one cache per watched resource, all on its own cluster.

Objects stay decoded JSON (dicts): the engine adapters and the job kinds read manifests
in that shape, and fields the manager does not model pass through untouched. There is one
job cache per enabled job kind (by framework name), built from the registry, and one
per resource an enabled kind's jobs reference (`ReadsReferencedObjects`: a TrainJob's
runtimes), shared with the job cache when that resource is a job kind too. Indexes
answer the controllers' lookups without scans (a job's Workloads per kind, a
ClusterQueue's LocalQueues). `run` keeps every cache current until cancelled; `synced`
turns true once every first list is stored, which is what /readyz reports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.kube.client import KubeClient
from core.kube.informer import Informer
from core.kube.resources import ResourceRef
from core.manager import watched_kinds as kinds
from core.manager.job_controller import (
    JOB_BY_COMPOSED_NAME,
    JOB_BY_PREBUILT_WORKLOAD,
    job_composed_index,
    job_prebuilt_workload_index,
    owner_index_name,
    workload_owner_index,
)
from core.manager.queue_status import LOCAL_QUEUE_BY_CLUSTER_QUEUE, local_queue_cluster_queue_index
from core.manager.tas_node_failure import (
    WORKLOAD_BY_ASSIGNED_NODE,
    workload_assigned_node_index,
)
from core.manager.topology_ungater import POD_BY_WORKLOAD, pod_workload_index
from core.manager.workload_priority_sync import (
    WORKLOAD_BY_PRIORITY_CLASS,
    workload_priority_class_index,
)
from integrations.framework.job_capabilities import composed
from integrations.framework.job_kind import JobResource
from integrations.framework.referenced_objects import referenced_resources
from integrations.framework.registry import FrameworkRegistry

Cache = Informer[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ManagerInformers:
    """Every cache the hub reads (see module docstring)."""

    resource_flavors: Cache
    cohorts: Cache
    cluster_queues: Cache
    local_queues: Cache
    workload_priority_classes: Cache
    admission_checks: Cache
    namespaces: Cache
    workloads: Cache
    jobs: dict[str, Cache]
    """One cache per enabled job kind, by framework name."""
    referenced: dict[JobResource, Cache]
    """One cache per resource enabled kinds' jobs reference (some shared with `jobs`)."""
    pod_priority_classes: Cache
    limit_ranges: Cache
    """Namespace defaults counted in the requests of pods that leave them out."""
    runtime_classes: Cache
    """Pod overhead of RuntimeClasses, counted in the requests of pods naming one."""
    topologies: Cache
    nodes: Cache
    occupying_pods: Cache
    """Topologies, Nodes and the bound, unfinished pods: what TAS places pods against."""
    admitted_pods: Cache
    """Pods of admitted pod sets (they carry the podset label), indexed by Workload: the
    topology ungater steers the TAS ones into their domains."""

    @classmethod
    def create(cls, client: KubeClient, kinds_enabled: FrameworkRegistry) -> ManagerInformers:
        def cache(resource: ResourceRef, **indexers: Any) -> Cache:
            return Informer(client, resource, into=dict, indexers=indexers or None)

        jobs = {
            kind.framework: cache(
                kind.resource,
                **{JOB_BY_PREBUILT_WORKLOAD: job_prebuilt_workload_index},
                **(
                    {JOB_BY_COMPOSED_NAME: job_composed_index(kind)}
                    if composed(kind) is not None
                    else {}
                ),
            )
            for kind in kinds_enabled
        }
        referenced: dict[JobResource, Cache] = {}
        for kind in kinds_enabled:
            for resource in referenced_resources(kind):
                if resource not in referenced:
                    shared = [jobs[k.framework] for k in kinds_enabled if k.resource == resource]
                    referenced[resource] = shared[0] if shared else cache(resource)
        return cls(
            resource_flavors=cache(kinds.RESOURCE_FLAVORS),
            cohorts=cache(kinds.COHORTS),
            cluster_queues=cache(kinds.CLUSTER_QUEUES),
            local_queues=cache(
                kinds.LOCAL_QUEUES,
                **{LOCAL_QUEUE_BY_CLUSTER_QUEUE: local_queue_cluster_queue_index},
            ),
            workload_priority_classes=cache(kinds.WORKLOAD_PRIORITY_CLASSES),
            admission_checks=cache(kinds.ADMISSION_CHECKS),
            namespaces=cache(kinds.NAMESPACES),
            workloads=cache(
                kinds.WORKLOADS,
                **{owner_index_name(kind): workload_owner_index(kind) for kind in kinds_enabled},
                **{WORKLOAD_BY_PRIORITY_CLASS: workload_priority_class_index},
                **{WORKLOAD_BY_ASSIGNED_NODE: workload_assigned_node_index},
            ),
            jobs=jobs,
            referenced=referenced,
            pod_priority_classes=cache(kinds.POD_PRIORITY_CLASSES),
            limit_ranges=cache(kinds.LIMIT_RANGES),
            runtime_classes=cache(kinds.RUNTIME_CLASSES),
            topologies=cache(kinds.TOPOLOGIES),
            nodes=cache(kinds.NODES),
            occupying_pods=Informer(
                client, kinds.PODS, into=dict, field_selector=kinds.OCCUPYING_PODS
            ),
            admitted_pods=Informer(
                client,
                kinds.PODS,
                into=dict,
                label_selector=kinds.ADMITTED_PODS,
                indexers={POD_BY_WORKLOAD: pod_workload_index},
            ),
        )

    def __iter__(self) -> Iterator[Cache]:
        return iter(
            (
                self.resource_flavors,
                self.cohorts,
                self.cluster_queues,
                self.local_queues,
                self.workload_priority_classes,
                self.admission_checks,
                self.namespaces,
                self.workloads,
                *self.jobs.values(),
                *self._referenced_only(),
                self.pod_priority_classes,
                self.limit_ranges,
                self.runtime_classes,
                self.topologies,
                self.nodes,
                self.occupying_pods,
                self.admitted_pods,
            )
        )

    def _referenced_only(self) -> list[Cache]:
        """Referenced caches that are not job caches too (each informer runs once)."""
        jobs = {id(cache) for cache in self.jobs.values()}
        return [cache for cache in self.referenced.values() if id(cache) not in jobs]

    def drop_unreferenced(self, still_needed: set[JobResource]) -> None:
        """Forget referenced caches no remaining kind needs (a kind left out at start)."""
        for resource in list(self.referenced):
            if resource not in still_needed:
                del self.referenced[resource]

    @property
    def engine_feeds(self) -> tuple[Cache, ...]:
        """The caches whose objects feed the engine (all but the job caches and what jobs
        reference, which the job controllers read): synced, the engine's figures are
        complete."""
        controllers = {id(cache) for cache in (*self.jobs.values(), *self.referenced.values())}
        return tuple(cache for cache in self if id(cache) not in controllers)

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self)

    async def run(self) -> None:
        """Keep every cache current until cancelled."""
        async with asyncio.TaskGroup() as group:
            for informer in self:
                group.create_task(
                    informer.run(), name=f"informer-{informer.watcher.resource.plural}"
                )

    async def wait_synced(self, timeout_seconds: float | None = None) -> None:
        async with asyncio.timeout(timeout_seconds):
            for informer in self:
                await informer.wait_synced()
