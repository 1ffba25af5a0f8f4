"""What the capacity-aware dispatcher knows about each worker: its report and its queues.

Two reads per worker, both cheap on the hot path:
- the worker's WorkerCapacity report from the connection's cache, parsed once per
  resourceVersion. A worker normally holds one report; when it holds several (say, a
  shared worker), the one whose `spec.clusterName` (or name) is the MultiKueueCluster's
  name is used, else none: guessing could send work where it does not fit;
- which ClusterQueue the worker's LocalQueue of the workload's queue name points to, read
  with one GET and reused for `ttl_seconds` (LocalQueues seldom change; the hub does not
  watch them on workers). A worker without that LocalQueue cannot run the workload; a
  failed read leaves the worker "unknown" rather than "does not fit";
- the worker's ResourceFlavors of that ClusterQueue, read and reused the same way, so a
  pod's node selector, affinity and tolerations narrow the flavors it may use (a CPU-only
  pool is not judged to fit a GPU job's selector). When they cannot be read (say, the
  hub's identity may not get them) the fit is judged from quota and nodes alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import structlog

from core.adapters.kueue_manifests import resource_flavor_from_manifest
from core.api.registry import kind_info
from core.api.worker_capacity import WorkerCapacity
from core.engine.dispatch.capacity_snapshot import (
    CapacitySnapshot,
    InvalidReportError,
    snapshot_from_report,
)
from core.engine.model import ResourceFlavor
from core.kube.errors import KubeError, NotFound
from core.kube.object_meta import resource_version_of
from hub.multikueue.connections.registry import WorkerRegistry

LOCAL_QUEUES = kind_info("LocalQueue")
RESOURCE_FLAVORS = kind_info("ResourceFlavor")
LOOKUP_TIMEOUT_SECONDS = 5.0
FAILED_LOOKUP_TTL_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class QueueLookup:
    """The answer about one worker LocalQueue: `known` False when the read failed."""

    known: bool
    cluster_queue: str | None = None


class CapacitySource(Protocol):
    """What the capacity-aware dispatcher reads per worker (`CapacityView` in the hub)."""

    def snapshot(self, cluster: str) -> CapacitySnapshot | None: ...

    async def cluster_queue(
        self, cluster: str, namespace: str, local_queue: str
    ) -> QueueLookup: ...

    async def flavor_specs(
        self, cluster: str, names: tuple[str, ...]
    ) -> Mapping[str, ResourceFlavor] | None: ...


def pick_report(reports: list[WorkerCapacity], cluster: str) -> WorkerCapacity | None:
    """The report describing `cluster` (see module docstring)."""
    for report in reports:
        if report.spec.cluster_name == cluster or report.metadata.name == cluster:
            return report
    return reports[0] if len(reports) == 1 else None


class CapacityView:
    """Reports and LocalQueue answers per worker, from the registry's connections."""

    def __init__(
        self,
        registry: WorkerRegistry,
        *,
        ttl_seconds: float = 30.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry
        self.ttl_seconds = ttl_seconds
        self._monotonic = monotonic
        self._parsed: dict[str, tuple[str, str, CapacitySnapshot | None]] = {}
        self._queues: dict[tuple[str, str, str], tuple[float, QueueLookup]] = {}
        self._flavors: dict[tuple[str, str], tuple[float, ResourceFlavor | None]] = {}
        """(cluster, flavor) → (expiry, definition; None: the flavor does not exist)."""
        self.log = structlog.get_logger("hub.multikueue.dispatch")

    def snapshot(self, cluster: str) -> CapacitySnapshot | None:
        connection = self.registry.connection(cluster)
        caches = None if connection is None else connection.caches
        if caches is None:
            return None
        report = pick_report(caches.capacity_reports(), cluster)
        if report is None:
            return None
        name, version = report.metadata.name, resource_version_of(report)
        cached = self._parsed.get(cluster)
        if cached is not None and cached[:2] == (name, version):
            return cached[2]
        try:
            parsed: CapacitySnapshot | None = snapshot_from_report(report)
        except InvalidReportError as error:
            self.log.warning(
                "multikueue.invalid_capacity_report", cluster=cluster, error=str(error)
            )
            parsed = None
        self._parsed[cluster] = (name, version, parsed)
        return parsed

    async def cluster_queue(self, cluster: str, namespace: str, local_queue: str) -> QueueLookup:
        key = (cluster, namespace, local_queue)
        now = self._monotonic()
        cached = self._queues.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        answer = await self._read(cluster, namespace, local_queue)
        ttl = self.ttl_seconds if answer.known else FAILED_LOOKUP_TTL_SECONDS
        self._queues[key] = (now + ttl, answer)
        return answer

    async def _read(self, cluster: str, namespace: str, local_queue: str) -> QueueLookup:
        connection = self.registry.connection(cluster)
        client = None if connection is None else connection.client
        if client is None or not local_queue:
            return QueueLookup(known=False)
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT_SECONDS):
                queue = await client.get(LOCAL_QUEUES, local_queue, namespace=namespace)
        except NotFound:
            return QueueLookup(known=True, cluster_queue=None)
        except (KubeError, TimeoutError) as error:
            self.log.info(
                "multikueue.local_queue_unknown",
                cluster=cluster,
                local_queue=f"{namespace}/{local_queue}",
                error=str(error),
            )
            return QueueLookup(known=False)
        target = (queue.get("spec") or {}).get("clusterQueue")
        return QueueLookup(known=True, cluster_queue=str(target) if target else None)

    async def flavor_specs(
        self, cluster: str, names: tuple[str, ...]
    ) -> Mapping[str, ResourceFlavor] | None:
        """The worker's flavors of these names (absent ones left out); None: unreadable."""
        now = self._monotonic()
        out: dict[str, ResourceFlavor] = {}
        for name in names:
            cached = self._flavors.get((cluster, name))
            if cached is None or cached[0] <= now:
                read = await self._read_flavor(cluster, name)
                if read is False:
                    return None
                flavor = read if isinstance(read, ResourceFlavor) else None
                self._flavors[(cluster, name)] = (now + self.ttl_seconds, flavor)
            else:
                flavor = cached[1]
            if flavor is not None:
                out[name] = flavor
        return out

    async def _read_flavor(self, cluster: str, name: str) -> ResourceFlavor | bool | None:
        """The flavor, None when it does not exist, False when it cannot be read."""
        connection = self.registry.connection(cluster)
        client = None if connection is None else connection.client
        if client is None:
            return False
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT_SECONDS):
                manifest = await client.get(RESOURCE_FLAVORS, name)
        except NotFound:
            return None
        except (KubeError, TimeoutError) as error:
            self.log.info(
                "multikueue.resource_flavor_unknown", cluster=cluster, flavor=name, error=str(error)
            )
            return False
        try:
            return resource_flavor_from_manifest(manifest)
        except (TypeError, ValueError, KeyError) as error:
            self.log.warning(
                "multikueue.resource_flavor_invalid", cluster=cluster, flavor=name, error=str(error)
            )
            return False
