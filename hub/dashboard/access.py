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

from core.api.groups import KUEUE_GROUP
from hub.visibility.access_review import Decision
from hub.visibility.authentication import UserInfo
from hub.visibility.authorization import ResourceAttributes
from hub.visibility.delegated_auth import DelegatedAuth

KUEUE_VERSION = "v1beta2"


class Action(enum.StrEnum):
    STOP_CLUSTER_QUEUE = "stop-cluster-queue"
    RESUME_CLUSTER_QUEUE = "resume-cluster-queue"
    DEACTIVATE_WORKLOAD = "deactivate-workload"


_VIEW_RESOURCES = {
    "fleet": "multikueueclusters",
    "queues": "clusterqueues",
    "workloads": "workloads",
    "workload": "workloads",
    "flavors": "resourceflavors",
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
