"""What the workload detail reads from apiservers on demand: Events and pod log tails.

Everything else the dashboard shows comes from the hub's caches; these two are read only
when a user opens one Workload (and may read them, see `access`). Each read is an async
call with a short timeout and a size cap (`tailLines`, `limitBytes`, a few pods), so a
slow or dead worker costs the caller at most `READ_TIMEOUT_SECONDS` and never blocks the
hub's loop. A log that cannot be read carries the apiserver's own words (on kwok nodes
there is no kubelet, and the apiserver says so) instead of being left out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson

from cli.ops.worker_pod_logs import LogSource, log_sources
from cli.ops.workload_related import event_view
from cli.ops.workload_story import EventView
from core.api.workload import Workload
from core.kube.client import KubeClient
from core.kube.errors import KubeError
from core.kube.resources import object_path
from integrations.framework.job_kind import JobKind
from integrations.framework.pod_selector import SelectsPodsFromStatus
from integrations.registry import REGISTRY

READ_TIMEOUT_SECONDS = 5.0
EVENTS_LIMIT = 30
"""The newest Events shown (Workload and job together)."""
EVENTS_READ = 500
"""At most this many Events read per object (a list is in name order, not time order)."""
LOG_PODS = 4
"""At most this many containers' logs (the job's oldest pods first)."""
LOG_TAIL_LINES = 50
LOG_LIMIT_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class LogTail:
    """One container's last lines, or why they could not be read."""

    pod: str
    container: str
    cluster: str
    text: str = ""
    error: str = ""


@dataclass(frozen=True, slots=True)
class PodLogs:
    """The log tails of a Workload's pods, or (no tails) why there are none."""

    tails: list[LogTail]
    note: str = ""


class WorkloadReads(Protocol):
    async def events(self, namespace: str, objects: list[tuple[str, str]]) -> list[EventView]:
        """The newest Events about these (kind, name) objects; KubeError when refused."""
        ...

    async def pod_logs(self, workload: Workload) -> PodLogs: ...


def owner_job(workload: Workload) -> tuple[str, str, JobKind | None] | None:
    """(kind, name, JobKind or None) of the job that owns the Workload, if any."""
    refs = workload.metadata.owner_references
    for owner in refs:
        if owner.controller or len(refs) == 1:
            return owner.kind, owner.name, REGISTRY.for_owner(owner.api_version, owner.kind)
    return None


class KubeWorkloadReads:
    """`WorkloadReads` through the hub's own client and its worker connections' clients."""

    def __init__(self, client: KubeClient, worker_client: Callable[[str], KubeClient | None]):
        self._client = client
        self._worker_client = worker_client

    async def events(self, namespace: str, objects: list[tuple[str, str]]) -> list[EventView]:
        async def one(kind: str, name: str) -> list[EventView]:
            selector = f"involvedObject.kind={kind},involvedObject.name={name}"
            raw = await self._client.request(
                "GET",
                f"/api/v1/namespaces/{namespace}/events",
                query={"fieldSelector": selector, "limit": str(EVENTS_READ)},
                timeout_seconds=READ_TIMEOUT_SECONDS,
            )
            items = orjson.loads(raw).get("items") or []
            return [event_view(item, kind, name) for item in items]

        found: list[EventView] = []
        for batch in await asyncio.gather(*(one(kind, name) for kind, name in objects)):
            found.extend(batch)
        found.sort(key=lambda event: event.time)
        return found[-EVENTS_LIMIT:]

    async def pod_logs(self, workload: Workload) -> PodLogs:
        worker = workload.status.cluster_name or ""
        client = self._client if not worker else self._worker_client(worker)
        where = f"worker {worker}" if worker else "the manager cluster"
        if client is None:
            return PodLogs(
                [],
                f"this hub replica holds no connection to worker {worker} (not the "
                "leader, or the worker is disconnected)",
            )
        owner = owner_job(workload)
        kind = None if owner is None else owner[2]
        if owner is None or kind is None:
            return PodLogs([], "the Workload has no job of a known kind, so no pods to read")
        kind_name, job_name = owner[0], owner[1]
        namespace = workload.metadata.namespace
        try:
            pods = await self._job_pods(client, namespace, job_name, kind)
        except KubeError as error:
            return PodLogs([], f"the pods on {where} could not be listed: {error}")
        sources = log_sources(pods, None)[:LOG_PODS]
        if not sources:
            return PodLogs([], f"{kind_name} {job_name} has no pods on {where} (yet)")
        tails = await asyncio.gather(
            *(self._tail(client, worker or "manager", namespace, s) for s in sources)
        )
        return PodLogs(list(tails))

    async def _job_pods(
        self, client: KubeClient, namespace: str, job: str, kind: JobKind
    ) -> list[dict[str, Any]]:
        selectors = [f"{label}={job}" for label in kind.pod_name_labels]
        if isinstance(kind, SelectsPodsFromStatus):
            raw = await client.request(
                "GET",
                object_path(kind.resource, job, namespace),
                timeout_seconds=READ_TIMEOUT_SECONDS,
            )
            selector = kind.pod_label_selector(orjson.loads(raw))
            selectors = [selector] if selector else []
        for selector in selectors:
            raw = await client.request(
                "GET",
                f"/api/v1/namespaces/{namespace}/pods",
                query={"labelSelector": selector, "limit": str(LOG_PODS * 4)},
                timeout_seconds=READ_TIMEOUT_SECONDS,
            )
            pods: list[dict[str, Any]] = orjson.loads(raw).get("items") or []
            if pods:
                return sorted(
                    pods,
                    key=lambda p: (
                        (p.get("metadata") or {}).get("creationTimestamp") or "",
                        (p.get("metadata") or {}).get("name") or "",
                    ),
                )
        return []

    async def _tail(
        self, client: KubeClient, cluster: str, namespace: str, source: LogSource
    ) -> LogTail:
        tail = LogTail(pod=source.pod, container=source.container, cluster=cluster)
        if not source.node:
            return replace(tail, error="no logs yet: the pod is not on a node (not scheduled)")
        try:
            raw = await client.request(
                "GET",
                f"/api/v1/namespaces/{namespace}/pods/{source.pod}/log",
                query={
                    "container": source.container,
                    "tailLines": str(LOG_TAIL_LINES),
                    "limitBytes": str(LOG_LIMIT_BYTES),
                },
                timeout_seconds=READ_TIMEOUT_SECONDS,
            )
        except KubeError as error:
            return replace(tail, error=f"the apiserver could not read it: {error}")
        return replace(tail, text=raw[:LOG_LIMIT_BYTES].decode(errors="replace"))
