"""Who may see which view and do which action, in the terms RBAC decides on.

Each view reads Kueue objects, so seeing it takes the same `list` (or `get`) the user
would need to read those objects from the apiserver; an action takes `patch` on the
object it changes. The cluster answers (SubjectAccessReview, through the visibility API's
`DelegatedAuth`), so a Role that lets a team list its Workloads in its namespace shows
that team its rows and nothing more.
"""

from __future__ import annotations

import enum
from typing import Protocol

from aiohttp import web

from core.api.groups import KUEUE_GROUP, KUEUE_VERSION
from hub.visibility.access_review import Decision
from hub.visibility.authentication import UserInfo
from hub.visibility.authorization import ResourceAttributes
from hub.visibility.delegated_auth import DelegatedAuth


class Action(enum.StrEnum):
    STOP_CLUSTER_QUEUE = "stop-cluster-queue"
    RESUME_CLUSTER_QUEUE = "resume-cluster-queue"
    DEACTIVATE_WORKLOAD = "deactivate-workload"
    SET_WORKLOAD_PRIORITY = "set-workload-priority"
    """Write a WorkloadPriorityClass (`hub.dashboard.priority_change`): `patch` on the
    object written, the job or the Workload, so the session cannot say it in advance."""


SESSION_ACTIONS = (
    Action.STOP_CLUSTER_QUEUE,
    Action.RESUME_CLUSTER_QUEUE,
    Action.DEACTIVATE_WORKLOAD,
)
"""Actions whose right depends on the kind of object only: the session reports them."""


SHOWN_RESOURCES = (
    "workloads",
    "clusterqueues",
    "localqueues",
    "cohorts",
    "resourceflavors",
    "multikueueclusters",
)
"""The Kueue resources the views show: what a read-only viewer's Role lists and gets."""

_VIEW_RESOURCES = {
    "fleet": "multikueueclusters",
    "queues": "clusterqueues",
    "workloads": "workloads",
    "workload": "workloads",
    "flavors": "resourceflavors",
    "history": "clusterqueues",
}


def view_attributes(view: str, namespace: str = "", name: str = "") -> ResourceAttributes:
    """What seeing `view` takes: list its objects (get, for one Workload)."""
    resource = _VIEW_RESOURCES[view]
    namespaced = resource == "workloads"
    return ResourceAttributes(
        verb="get" if view == "workload" else "list",
        group=KUEUE_GROUP,
        version=KUEUE_VERSION,
        resource=resource,
        subresource="",
        name=name if view == "workload" else "",
        namespace=namespace if namespaced else "",
    )


def action_attributes(action: Action, namespace: str = "", name: str = "") -> ResourceAttributes:
    """What doing `action` takes: patch the object it changes."""
    workload = action is Action.DEACTIVATE_WORKLOAD
    return ResourceAttributes(
        verb="patch",
        group=KUEUE_GROUP,
        version=KUEUE_VERSION,
        resource="workloads" if workload else "clusterqueues",
        subresource="",
        name=name,
        namespace=namespace if workload else "",
    )


def _core_attributes(
    verb: str, resource: str, namespace: str, subresource: str = ""
) -> ResourceAttributes:
    return ResourceAttributes(
        verb=verb,
        group="",
        version="v1",
        resource=resource,
        subresource=subresource,
        name="",
        namespace=namespace,
    )


def events_attributes(namespace: str) -> ResourceAttributes:
    """What the workload detail's Events take: list events in the Workload's namespace."""
    return _core_attributes("list", "events", namespace)


def logs_attributes(namespace: str) -> ResourceAttributes:
    """What its pod logs take: get pods/log in the Workload's namespace (asked of the
    manager; the hub reads a worker's copies with its own identity there)."""
    return _core_attributes("get", "pods", namespace, subresource="log")


def patch_attributes(
    group: str, version: str, plural: str, namespace: str, name: str
) -> ResourceAttributes:
    """What writing one object takes: patch on it."""
    return ResourceAttributes(
        verb="patch",
        group=group,
        version=version,
        resource=plural,
        subresource="",
        name=name,
        namespace=namespace,
    )


class DashboardAuth(Protocol):
    """Authentication and authorization as `DelegatedAuth` does them."""

    async def authenticate(self, request: web.Request) -> UserInfo | None: ...

    async def decide(self, user: UserInfo, attributes: ResourceAttributes) -> Decision: ...


class DelegatedDashboardAuth:
    """`DashboardAuth` over the visibility API's `DelegatedAuth` (TokenReview, SAR)."""

    def __init__(self, delegated: DelegatedAuth) -> None:
        self._delegated = delegated

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        return await self._delegated.authenticate(request)

    async def decide(self, user: UserInfo, attributes: ResourceAttributes) -> Decision:
        return await self._delegated.access.decide(user, attributes)
