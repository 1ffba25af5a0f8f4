"""A dashboard over plain lists, with RBAC as a set of grants (what the cluster would say)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from cli.ops.workload_story import EventView
from core.api.workload import Workload
from hub.dashboard.priority_change import PriorityTarget
from hub.dashboard.source import WorkerSummary
from hub.dashboard.workload_reads import LogTail, PodLogs
from hub.visibility.access_review import Decision
from hub.visibility.authentication import UserInfo, bearer_token
from hub.visibility.authorization import ResourceAttributes

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class ListSource:
    cqs: list[dict[str, Any]] = field(default_factory=list)
    lqs: list[dict[str, Any]] = field(default_factory=list)
    cohort_list: list[dict[str, Any]] = field(default_factory=list)
    flavors: list[dict[str, Any]] = field(default_factory=list)
    wls: list[dict[str, Any]] = field(default_factory=list)
    worker_list: list[WorkerSummary] | None = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    priority_classes: dict[str, int] = field(default_factory=dict)

    def cluster_queues(self) -> Sequence[dict[str, Any]]:
        return self.cqs

    def local_queues(self) -> Sequence[dict[str, Any]]:
        return self.lqs

    def cohorts(self) -> Sequence[dict[str, Any]]:
        return self.cohort_list

    def resource_flavors(self) -> Sequence[dict[str, Any]]:
        return self.flavors

    def workloads(self) -> Sequence[dict[str, Any]]:
        return self.wls

    def workload(self, namespace: str, name: str) -> dict[str, Any] | None:
        for raw in self.wls:
            meta = raw.get("metadata") or {}
            if meta.get("namespace") == namespace and meta.get("name") == name:
                return raw
        return None

    def workload_priority_classes(self) -> dict[str, int]:
        return self.priority_classes

    def workers(self) -> list[WorkerSummary] | None:
        return self.worker_list

    def queue_positions(self) -> dict[str, int]:
        return self.positions


Grant = tuple[str, str, str, str]
"""(user, verb, resource[/subresource], namespace); namespace "*" grants every namespace
and the cluster."""


@dataclass
class GrantsAuth:
    """Tokens → users, and a decision per grant, as TokenReview and SAR would answer."""

    tokens: dict[str, str] = field(default_factory=dict)
    grants: set[Grant] = field(default_factory=set)
    decisions: list[ResourceAttributes] = field(default_factory=list)

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        token = bearer_token(request.headers.get("Authorization"))
        name = self.tokens.get(token or "")
        return None if name is None else UserInfo(name=name)

    async def decide(self, user: UserInfo, attributes: ResourceAttributes) -> Decision:
        self.decisions.append(attributes)
        resource = attributes.resource + (
            f"/{attributes.subresource}" if attributes.subresource else ""
        )
        key = (user.name, attributes.verb, resource)
        allowed = (*key, "*") in self.grants or (
            bool(attributes.namespace) and (*key, attributes.namespace) in self.grants
        )
        return Decision(allowed=allowed, reason="" if allowed else "no RBAC rule")


@dataclass
class RecordedActions:
    done: list[tuple[str, ...]] = field(default_factory=list)

    async def set_cluster_queue_stopped(self, name: str, stopped: bool) -> None:
        self.done.append(("stop" if stopped else "resume", name))

    async def deactivate_workload(self, namespace: str, name: str) -> None:
        self.done.append(("deactivate", namespace, name))

    async def set_priority_class(self, target: PriorityTarget, name: str, value: int) -> None:
        self.done.append(("priority", target.kind, target.namespace, target.name, name, str(value)))


@dataclass
class CannedReads:
    """Events and log tails as a cluster would give them, recording what was asked."""

    event_list: list[EventView] = field(default_factory=list)
    tails: list[LogTail] = field(default_factory=list)
    asked: list[tuple[str, ...]] = field(default_factory=list)

    async def events(self, namespace: str, objects: list[tuple[str, str]]) -> list[EventView]:
        self.asked.append(("events", namespace, *(f"{k}/{n}" for k, n in objects)))
        return self.event_list

    async def pod_logs(self, workload: Workload) -> PodLogs:
        self.asked.append(("logs", workload.metadata.namespace, workload.metadata.name))
        return PodLogs(self.tails, "" if self.tails else "no pods")


def workload(
    namespace: str,
    name: str,
    *,
    conditions: Sequence[dict[str, Any]] = (),
    cluster_name: str | None = None,
    queue: str = "user-queue",
    priority_class: str | None = None,
    owner: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    """A Workload; `priority_class` a WorkloadPriorityClass it points at, `owner`
    (apiVersion, kind, name) the job that owns it."""
    status: dict[str, Any] = {"conditions": list(conditions)}
    if cluster_name:
        status["clusterName"] = cluster_name
    spec: dict[str, Any] = {
        "queueName": queue,
        "priority": 5,
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
    }
    if priority_class:
        spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": priority_class,
        }
    metadata: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": f"uid-{name}",
        "creationTimestamp": "2026-06-01T11:59:00Z",
    }
    if owner:
        metadata["ownerReferences"] = [
            {
                "apiVersion": owner[0],
                "kind": owner[1],
                "name": owner[2],
                "uid": f"uid-{owner[2]}",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-06-01T11:59:30Z",
    }
