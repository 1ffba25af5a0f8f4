"""Writes the one WorkerCapacity object of this worker, never blindly.

The object is cluster-scoped and named after the cluster. The first write creates it
(spec only: the apiserver drops status on create) and every report then goes in as a
merge patch of the status subresource guarded by the resourceVersion last seen
(`core.kube.status_writer`): if anything else wrote in between, the object is read again
and the report re-applied on the fresh version, so an agent never overwrites a change it
has not seen (for instance a second replica that believes it leads). An object deleted
under the agent is created again on the next write.

The status patch lists every top-level list explicitly, even when empty: a merge patch
replaces lists whole, and an omitted key would leave a previous report's entries behind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import structlog

from core.api.codec import to_builtins
from core.api.meta import ObjectMeta
from core.api.registry import kind_info
from core.api.worker_capacity import WorkerCapacity
from core.kube.client import KubeClient, PatchType
from core.kube.errors import AlreadyExists, Conflict, NotFound
from core.kube.status_writer import status_patch, write_status
from core.manager.field_manager import AGENT_FIELD_MANAGER
from worker_agent.reporting_condition import ReportingReason, reporting_condition

WORKER_CAPACITIES: Final = kind_info("WorkerCapacity")
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "fleetq-agent"
_LISTS = ("flavors", "clusterQueues", "conditions")


def status_body(report: WorkerCapacity) -> dict[str, Any]:
    """The report's status as a merge patch that replaces the previous report entirely."""
    body = to_builtins(report.status)
    for key in _LISTS:
        body.setdefault(key, [])
    return body


class ReportWriter:
    """Creates, updates and finally marks stale one WorkerCapacity (see module docstring)."""

    def __init__(self, client: KubeClient, name: str) -> None:
        self.client = client
        self.name = name
        self.log = structlog.get_logger("worker_agent.report").bind(worker_capacity=name)
        self.current: WorkerCapacity | None = None
        """The object as this agent last read or wrote it; None until the first write."""

    async def write(self, report: WorkerCapacity) -> WorkerCapacity:
        """Make the object hold `report`'s spec and status; returns it as written."""
        for _ in range(2):  # a second round only if the object vanished under us
            current = self.current or await self._existing_or_created(report)
            try:
                if current.spec != report.spec:
                    current = await self._patch_spec(current, report)
                result = await write_status(
                    self.client,
                    WORKER_CAPACITIES,
                    current,
                    lambda _: status_body(report),
                    into=WorkerCapacity,
                    field_manager=AGENT_FIELD_MANAGER,
                )
            except NotFound:
                self.current = None
                continue
            self.current = result.object
            return result.object
        raise NotFound(404, "NotFound", f"WorkerCapacity {self.name} deleted while writing it")

    async def mark_stopped(self, now: datetime) -> bool:
        """Say Reporting=False on the object last written, if nobody wrote it since.

        One guarded attempt: losing the race means another agent owns the report now,
        and its word stands.
        """
        current = self.current
        if current is None or not current.metadata.resource_version:
            return False
        condition = reporting_condition(
            ReportingReason.AGENT_STOPPED, now, current.status.conditions
        )
        patch = status_patch(
            current.metadata.resource_version, {"conditions": [to_builtins(condition)]}
        )
        try:
            await self.client.patch(
                WORKER_CAPACITIES,
                self.name,
                patch,
                patch_type=PatchType.MERGE,
                subresource="status",
                field_manager=AGENT_FIELD_MANAGER,
            )
        except (Conflict, NotFound) as error:
            self.log.info("agent.report_not_marked_stopped", reason=type(error).__name__)
            return False
        return True

    async def _existing_or_created(self, report: WorkerCapacity) -> WorkerCapacity:
        body = WorkerCapacity(
            metadata=ObjectMeta(name=self.name, labels={MANAGED_BY_LABEL: MANAGED_BY}),
            spec=report.spec,
        )
        try:
            created = await self.client.create(
                WORKER_CAPACITIES, body, field_manager=AGENT_FIELD_MANAGER, into=WorkerCapacity
            )
        except AlreadyExists:
            return await self.client.get(WORKER_CAPACITIES, self.name, into=WorkerCapacity)
        self.log.info("agent.report_created")
        return created

    async def _patch_spec(self, current: WorkerCapacity, report: WorkerCapacity) -> WorkerCapacity:
        patch = {
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": to_builtins(report.spec),
        }
        try:
            return await self.client.patch(
                WORKER_CAPACITIES,
                self.name,
                patch,
                patch_type=PatchType.MERGE,
                field_manager=AGENT_FIELD_MANAGER,
                into=WorkerCapacity,
            )
        except Conflict:
            fresh = await self.client.get(WORKER_CAPACITIES, self.name, into=WorkerCapacity)
            if fresh.spec == report.spec:
                return fresh
            raise
