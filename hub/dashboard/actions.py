"""The dashboard's actions: the same writes `fleetq stop` / `fleetq resume` make.

A ClusterQueue is stopped with `spec.stopPolicy: Hold` (no new admissions; running
workloads stay) and resumed with `None`; a Workload is deactivated with
`spec.active: false` (the hub evicts it and its job is suspended); a Workload's priority
is changed where Kueue expects it (`hub.dashboard.priority_change`). The hub makes the
write with its own identity after the user's SubjectAccessReview for `patch` allowed it.
"""

from __future__ import annotations

from typing import Any, Protocol

from core.kube.client import KubeClient
from core.manager import watched_kinds as kinds
from hub.dashboard.priority_change import PriorityTarget
from integrations.framework.job_kind import JobResource
from integrations.framework.labels import PRIORITY_CLASS_LABEL


class DashboardActions(Protocol):
    async def set_cluster_queue_stopped(self, name: str, stopped: bool) -> None: ...

    async def deactivate_workload(self, namespace: str, name: str) -> None: ...

    async def set_priority_class(self, target: PriorityTarget, name: str, value: int) -> None:
        """Give `target` the WorkloadPriorityClass `name` (whose value is `value`)."""
        ...


class KubeActions:
    """`DashboardActions` as merge patches through the hub's client."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def set_cluster_queue_stopped(self, name: str, stopped: bool) -> None:
        body = {"spec": {"stopPolicy": "Hold" if stopped else "None"}}
        await self._client.patch(kinds.CLUSTER_QUEUES, name, body)

    async def deactivate_workload(self, namespace: str, name: str) -> None:
        await self._client.patch(
            kinds.WORKLOADS, name, {"spec": {"active": False}}, namespace=namespace
        )

    async def set_priority_class(self, target: PriorityTarget, name: str, value: int) -> None:
        if target.on_job:
            resource = JobResource(target.group, target.version, target.plural, target.kind)
            label = {"metadata": {"labels": {PRIORITY_CLASS_LABEL: name}}}
            await self._client.patch(resource, target.name, label, namespace=target.namespace)
            return
        body: dict[str, Any] = {"spec": {"priorityClassRef": {"name": name}, "priority": value}}
        await self._client.patch(kinds.WORKLOADS, target.name, body, namespace=target.namespace)
