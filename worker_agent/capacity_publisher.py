"""Keeps this worker's WorkerCapacity report current, so the hub can place work by it.

Inputs are informer caches: Nodes and Pods (only bound pods that have not finished, by
field selector, so the apiserver does the filtering) are watched here; ResourceFlavors
and ClusterQueues come from the local admission runtime's caches, and ClusterQueue
usage from its engine (`queue_figures_source`), so the report and local admission agree.

Writing (`report_writer`), paced so the hub sees every change soon and the apiserver is
not flooded:
- a change that can move a number (`change_relevance`) wakes the publisher; the report is
  rebuilt from the caches and written if it differs from the last one written
  (`worker_agent.capacity.report.report_due`);
- at most one write per `min_interval_seconds` (1 s): a change arriving sooner waits out
  the rest of the interval and is coalesced with whatever else arrives meanwhile, so a
  change is published at most about a second after it happened;
- with no change, the report is rewritten every `heartbeat_seconds` (30 s) with a new
  `observedTime`, so the hub can tell a quiet worker from a dead agent;
- only while `is_leading()` (one writer among agent replicas);
- every report says Reporting=True; a clean stop says Reporting=False on the last one.
Failed writes are logged and retried with backoff; they never stop local admission.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog

from core.api.codec import decode
from core.api.json_types import Json
from core.api.resource_flavor import ResourceFlavor
from core.api.worker_capacity import WorkerCapacity
from core.engine.dispatch.capacity_snapshot import REPORT_HEARTBEAT_SECONDS
from core.kube.backoff import ExponentialBackoff
from core.kube.client import KubeClient
from core.kube.errors import ApiError, KubeError
from core.kube.informer import EventHandlers, Informer
from core.kube.object_meta import name_of, resource_version_of
from core.kube.resources import NODES, PODS
from worker_agent.capacity.queue_figures import ClusterQueueFigures
from worker_agent.capacity.report import build_report, report_due
from worker_agent.change_relevance import node_change_matters, pod_change_matters
from worker_agent.publisher_metrics import PublisherMetrics, WriteResult
from worker_agent.report_writer import ReportWriter
from worker_agent.reporting_condition import ReportingReason, reporting_condition

Cache = Informer[dict[str, Any]]
QueueFiguresOf = Callable[[Iterable[Json]], Sequence[ClusterQueueFigures]]

# Pods that hold room on a node: bound, and neither Succeeded nor Failed.
OCCUPYING_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
NOT_LEADING_POLL_SECONDS = 0.5
STOP_WRITE_TIMEOUT_SECONDS = 5.0
# A heartbeat wake-up lands this much after the report turns a heartbeat old, so
# `report_due` never sees it a hair too young and skips a beat.
_HEARTBEAT_SLACK_SECONDS = 0.05
WRITE_RETRY = ExponentialBackoff(1.0, 30.0, jitter=0.2)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class PublisherSettings:
    """How the publisher names its report and paces its writes."""

    cluster_name: str
    report_name: str = ""
    """Name of the WorkerCapacity object; empty: the cluster name."""
    min_interval_seconds: float = 1.0
    heartbeat_seconds: float = REPORT_HEARTBEAT_SECONDS
    retry: ExponentialBackoff = WRITE_RETRY


class CapacityPublisher:
    """Builds and writes the report (see module docstring). Create inside a running loop."""

    def __init__(
        self,
        client: KubeClient,
        settings: PublisherSettings,
        *,
        resource_flavors: Cache,
        cluster_queues: Cache,
        queue_figures: QueueFiguresOf,
        topologies: Cache | None = None,
        wait_for: Sequence[Informer[Any]] = (),
        is_leading: Callable[[], bool] = lambda: True,
        clock: Callable[[], datetime] = utc_now,
        metrics: PublisherMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.name = settings.report_name or settings.cluster_name
        self.writer = ReportWriter(client, self.name)
        self.nodes: Cache = Informer(client, NODES, into=dict)
        self.pods: Cache = Informer(client, PODS, into=dict, field_selector=OCCUPYING_PODS)
        self.resource_flavors = resource_flavors
        self.cluster_queues = cluster_queues
        self.queue_figures = queue_figures
        self.topologies = topologies
        self.wait_for = [self.nodes, self.pods, resource_flavors, cluster_queues, *wait_for]
        self.is_leading = is_leading
        self.clock = clock
        self.metrics = metrics or PublisherMetrics()
        self.log = structlog.get_logger("worker_agent.publisher").bind(
            worker_capacity=self.name, cluster=settings.cluster_name
        )
        self._changed = asyncio.Event()
        self._flavors: dict[str, tuple[str, ResourceFlavor | None]] = {}
        self.nodes.add_handlers(self._handlers(node_change_matters))
        self.pods.add_handlers(self._handlers(pod_change_matters))
        resource_flavors.add_handlers(self._handlers())
        cluster_queues.add_handlers(self._handlers())
        if topologies is not None:
            topologies.add_handlers(self._handlers())

    # -- change signals ------------------------------------------------------------------
    def mark_changed(self) -> None:
        """Something the report shows may have changed: rebuild soon."""
        self._changed.set()

    def workloads_changed(self, keys: Collection[str]) -> None:
        """EngineListener: workload statuses alone do not move report figures."""

    def queues_touched(self, cluster_queues: Collection[str] | None) -> None:
        """EngineListener: a queue's usage or backlog moved."""
        self._changed.set()

    def _handlers(
        self, matters: Callable[[Json, Json], bool] | None = None
    ) -> EventHandlers[dict[str, Any]]:
        def updated(old: Json, new: Json) -> None:
            if matters is None or matters(old, new):
                self._changed.set()

        return EventHandlers(
            on_add=lambda _: self._changed.set(),
            on_update=updated,
            on_delete=lambda _: self._changed.set(),
        )

    # -- state ---------------------------------------------------------------------------
    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.wait_for)

    @property
    def last_report(self) -> WorkerCapacity | None:
        return self.writer.current

    # -- running -------------------------------------------------------------------------
    async def run(self) -> None:
        """Watch and publish until cancelled; then mark the report stopped."""
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.nodes.run(), name="informer-nodes")
                group.create_task(self.pods.run(), name="informer-pods")
                for informer in self.wait_for:
                    await informer.wait_synced()
                self.log.info("agent.capacity_caches_synced", nodes=len(self.nodes.store))
                await self._publish_loop()
        finally:
            await self._say_stopped()

    async def _publish_loop(self) -> None:
        failures = 0
        while True:
            if not self.is_leading():
                # Changes pile up unread meanwhile; the first report as leader covers them.
                await asyncio.sleep(NOT_LEADING_POLL_SECONDS)
                continue
            started = time.monotonic()
            self._changed.clear()
            try:
                await self.publish_once()
            except (KubeError, OSError) as error:
                self.metrics.wrote(WriteResult.FAILED)
                delay = self.settings.retry.delay(failures)
                failures += 1
                self.log.warning(
                    "agent.report_write_failed",
                    error=str(error),
                    status=getattr(error, "status", None) if isinstance(error, ApiError) else None,
                    retry_in_seconds=round(delay, 2),
                )
                self._changed.set()
                await asyncio.sleep(delay)
                continue
            failures = 0
            await self._wait_for_change(self._until_heartbeat())
            await asyncio.sleep(
                max(0.0, started + self.settings.min_interval_seconds - time.monotonic())
            )

    async def publish_once(self) -> bool:
        """Build the report and write it if due; returns whether it wrote."""
        now = self.clock()
        report = self.build(now)
        if not report_due(self.writer.current, report, now, self.settings.heartbeat_seconds):
            return False
        written = await self.writer.write(report)
        self.metrics.wrote(WriteResult.WRITTEN, now.timestamp())
        self.log.debug("agent.report_written", resource_version=written.metadata.resource_version)
        return True

    def build(self, now: datetime) -> WorkerCapacity:
        """The report the caches support at `now`, with Reporting=True."""
        with self.metrics.build_seconds.time():
            report = build_report(
                cluster_name=self.settings.cluster_name,
                name=self.name,
                nodes=self.nodes.store,
                pods=self.pods.store,
                flavors=self._resource_flavors(),
                cluster_queues=self.queue_figures(self.cluster_queues.store),
                now=now,
                topologies=self._topology_levels(),
            )
        previous = self.writer.current.status.conditions if self.writer.current else ()
        condition = reporting_condition(ReportingReason.AGENT_RUNNING, now, previous)
        status = msgspec.structs.replace(report.status, conditions=[condition])
        return msgspec.structs.replace(report, status=status)

    def _topology_levels(self) -> dict[str, list[str]]:
        """Topology name -> its level labels, widest first."""
        if self.topologies is None:
            return {}
        return {
            name_of(t): [
                str(level.get("nodeLabel", ""))
                for level in (t.get("spec") or {}).get("levels") or ()
            ]
            for t in self.topologies.store
        }

    def _resource_flavors(self) -> list[ResourceFlavor]:
        out = []
        seen = set()
        for manifest in self.resource_flavors.store:
            name, version = name_of(manifest), resource_version_of(manifest)
            seen.add(name)
            cached = self._flavors.get(name)
            if cached is None or cached[0] != version:
                cached = (version, self._decode_flavor(manifest))
                self._flavors[name] = cached
            if cached[1] is not None:
                out.append(cached[1])
        for gone in self._flavors.keys() - seen:
            del self._flavors[gone]
        return out

    def _decode_flavor(self, manifest: Json) -> ResourceFlavor | None:
        try:
            return decode(ResourceFlavor, manifest)
        except msgspec.MsgspecError as error:
            self.log.warning(
                "agent.resource_flavor_skipped", resource_flavor=name_of(manifest), error=str(error)
            )
            return None

    def _until_heartbeat(self) -> float:
        current = self.writer.current
        observed = current.status.observed_time if current is not None else None
        if observed is None:
            return self.settings.heartbeat_seconds
        age = (self.clock() - observed).total_seconds()
        return max(0.0, self.settings.heartbeat_seconds - age) + _HEARTBEAT_SLACK_SECONDS

    async def _wait_for_change(self, timeout_seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_seconds):
                await self._changed.wait()

    async def _say_stopped(self) -> None:
        if self.writer.current is None:
            return
        try:
            async with asyncio.timeout(STOP_WRITE_TIMEOUT_SECONDS):
                if await self.writer.mark_stopped(self.clock()):
                    self.log.info("agent.report_marked_stopped")
        except (KubeError, OSError, TimeoutError) as error:
            self.log.warning("agent.report_not_marked_stopped", error=str(error))
