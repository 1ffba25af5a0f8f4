"""The caches the hub keeps of one worker: our remote Workloads and jobs, and its capacity.

Workloads and jobs are watched with the origin label as selector, so the hub never caches
(or sees) objects it did not create there, and another manager with another origin can
share the worker. WorkerCapacity reports are fleetq's own: a worker running upstream Kueue
has no such API, and a worker whose kubeconfig may not read it answers 403; both simply
mean "no reports", never a failed connection.

`preflight` asks each API once (a one-item list, bounded by a timeout) before any informer
starts, so an unreachable worker or a missing Workload API fails the connection attempt at
once with the apiserver's own message, instead of an informer retrying in silence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from core.api.json_types import JsonDict
from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL
from core.api.registry import kind_info
from core.api.worker_capacity import WorkerCapacity
from core.kube.client import KubeClient
from core.kube.errors import Forbidden, NotFound
from core.kube.informer import EventHandlers, Informer
from core.kube.object_meta import make_key, namespace_of, object_key
from core.kube.resources import ResourceRef
from hub.multikueue.connections.worker_events import (
    CapacityChanged,
    RemoteObjectChanged,
    WorkerListener,
)
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL
from integrations.framework.registry import DEFAULT_FRAMEWORKS
from integrations.registry import REGISTRY

WORKLOAD_KIND = "Workload"
JOBS_BY_WORKLOAD = "multikueue-prebuilt-workload"
"""Index of a worker's job caches: our jobs by the `namespace/name` of the Workload their
prebuilt-workload name gives (the Pods of a pod group share one)."""


_DEFAULT_JOB_KINDS = {
    kind.framework: kind.resource for kind in REGISTRY.enabled(DEFAULT_FRAMEWORKS)
}


@dataclass(frozen=True, slots=True)
class RemoteKinds:
    """Which APIs are cached on every worker; tests swap in others."""

    workloads: ResourceRef = field(default_factory=lambda: kind_info("Workload"))
    jobs: Mapping[str, ResourceRef] = field(default_factory=lambda: dict(_DEFAULT_JOB_KINDS))
    """Job kinds by framework name (the Configuration's `integrations.frameworks`)."""
    capacities: ResourceRef = field(default_factory=lambda: kind_info("WorkerCapacity"))


class RemoteCaches:
    """Informers on one worker (not started: the connection runs them)."""

    def __init__(
        self,
        client: KubeClient,
        cluster: str,
        origin: str,
        kinds: RemoteKinds,
        listener: WorkerListener,
        *,
        with_capacities: bool,
    ) -> None:
        self.cluster = cluster
        self.kinds = kinds
        self._listener = listener
        selector = f"{MULTIKUEUE_ORIGIN_LABEL}={origin}"
        self.workloads: Informer[JsonDict] = Informer(
            client, kinds.workloads, into=dict, label_selector=selector
        )
        self.workloads.add_handlers(self._object_handlers(WORKLOAD_KIND))
        self.jobs: dict[str, Informer[JsonDict]] = {}
        for framework, resource in kinds.jobs.items():
            informer: Informer[JsonDict] = Informer(
                client,
                resource,
                into=dict,
                label_selector=selector,
                indexers={JOBS_BY_WORKLOAD: _prebuilt_workload_index},
            )
            informer.add_handlers(self._object_handlers(framework))
            self.jobs[framework] = informer
        self.capacities: Informer[WorkerCapacity] | None = None
        if with_capacities:
            self.capacities = Informer(client, kinds.capacities, into=WorkerCapacity)
            self.capacities.add_handlers(
                EventHandlers(
                    on_add=self._capacity_changed,
                    on_update=lambda _, new: self._capacity_changed(new),
                    on_delete=lambda _: self._listener(CapacityChanged(self.cluster, None)),
                )
            )

    @classmethod
    async def open(
        cls,
        client: KubeClient,
        cluster: str,
        origin: str,
        kinds: RemoteKinds,
        listener: WorkerListener,
        *,
        timeout_seconds: float,
    ) -> RemoteCaches:
        """Check every API answers (see module docstring), then build the informers."""
        await probe(client, kinds.workloads, timeout_seconds)
        for resource in kinds.jobs.values():
            await probe(client, resource, timeout_seconds)
        try:
            await probe(client, kinds.capacities, timeout_seconds)
        except (NotFound, Forbidden) as error:
            structlog.get_logger("hub.multikueue").info(
                "multikueue.no_capacity_reports", cluster=cluster, reason=error.reason
            )
            with_capacities = False
        else:
            with_capacities = True
        return cls(client, cluster, origin, kinds, listener, with_capacities=with_capacities)

    def informers(self) -> Iterator[Informer[Any]]:
        yield self.workloads
        yield from self.jobs.values()
        if self.capacities is not None:
            yield self.capacities

    async def wait_synced(self, timeout_seconds: float) -> None:
        """Wait until every cache holds its first list (raises TimeoutError)."""
        async with asyncio.timeout(timeout_seconds):
            for informer in self.informers():
                await informer.wait_synced()

    def watch_errors(self) -> int:
        """Failed list/watch calls so far, summed over the caches (a rising count is a hint)."""
        return sum(informer.watcher.stats.errors for informer in self.informers())

    def capacity_reports(self) -> list[WorkerCapacity]:
        """The worker's WorkerCapacity objects; empty when it publishes none."""
        return [] if self.capacities is None else self.capacities.store.list()

    def _object_handlers(self, kind: str) -> EventHandlers[JsonDict]:
        def changed(obj: JsonDict, deleted: bool = False) -> None:
            self._listener(
                RemoteObjectChanged(
                    self.cluster, kind, object_key(obj), workload_key(kind, obj), obj, deleted
                )
            )

        return EventHandlers(
            on_add=changed,
            on_update=lambda _, new: changed(new),
            on_delete=lambda obj: changed(obj, deleted=True),
        )

    def _capacity_changed(self, report: WorkerCapacity) -> None:
        self._listener(CapacityChanged(self.cluster, report))


def workload_key(kind: str, obj: JsonDict) -> str | None:
    """The Workload a remote object belongs to: itself, or the one a job's label names."""
    if kind == WORKLOAD_KIND:
        return object_key(obj)
    metadata = obj.get("metadata") or {}
    name = (metadata.get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL) or (
        metadata.get("annotations") or {}
    ).get(PREBUILT_WORKLOAD_LABEL)
    return make_key(namespace_of(obj), str(name)) if name else None


def _prebuilt_workload_index(obj: JsonDict) -> tuple[str, ...]:
    key = workload_key("", obj)
    return () if key is None else (key,)


async def probe(client: KubeClient, resource: ResourceRef, timeout_seconds: float) -> None:
    """One bounded, authenticated read: does the worker answer for this API?"""
    async with asyncio.timeout(timeout_seconds):
        await client.list(resource, limit=1)
