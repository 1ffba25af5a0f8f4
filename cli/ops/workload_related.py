"""What surrounds a Workload on the manager: the job that owns it and the recent Events.

The owner is found through the job-framework registry (any registered kind). Both are
best-effort context for `describe`: a job or Event the user may not read is left out
rather than failing the whole story.
"""

from __future__ import annotations

from typing import Any

from cli.join.cluster_rest import ClusterCallError, ClusterRest
from cli.ops.workload_story import EventView, JobView
from core.api.workload import Workload
from core.kube.resources import object_path
from integrations.registry import REGISTRY

RECENT_EVENTS = 10


def related_job(manager: ClusterRest, workload: Workload) -> JobView | None:
    for owner in workload.metadata.owner_references:
        if not (owner.controller or len(workload.metadata.owner_references) == 1):
            continue
        kind = REGISTRY.for_owner(owner.api_version, owner.kind)
        if kind is None:
            return JobView(kind=owner.kind, name=owner.name, found=False)
        path = object_path(kind.resource, owner.name, workload.metadata.namespace)
        try:
            job = manager.get(path)
        except ClusterCallError:
            job = None
        if job is None:
            return JobView(kind=owner.kind, name=owner.name, found=False)
        spec, status = job.get("spec") or {}, job.get("status") or {}
        return JobView(
            kind=owner.kind,
            name=owner.name,
            found=True,
            suspended=bool(spec.get("suspend", False)),
            active=int(status.get("active") or 0),
            succeeded=int(status.get("succeeded") or 0),
            failed=int(status.get("failed") or 0),
        )
    return None


def recent_events(
    manager: ClusterRest, namespace: str, objects: list[tuple[str, str]]
) -> list[EventView]:
    """The last RECENT_EVENTS Events about the (kind, name) objects, oldest first."""
    found: list[EventView] = []
    for kind, name in objects:
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        try:
            answer = manager.request(
                "GET", f"/api/v1/namespaces/{namespace}/events", query={"fieldSelector": selector}
            )
        except ClusterCallError:
            continue
        found.extend(event_view(item, kind, name) for item in answer.get("items") or [])
    found.sort(key=lambda event: event.time)
    return found[-RECENT_EVENTS:]


def event_view(item: dict[str, Any], kind: str, name: str) -> EventView:
    meta = item.get("metadata") or {}
    time = (
        item.get("lastTimestamp")
        or item.get("eventTime")
        or item.get("firstTimestamp")
        or meta.get("creationTimestamp")
        or ""
    )
    return EventView(
        time=str(time),
        type=str(item.get("type") or ""),
        reason=str(item.get("reason") or ""),
        object=f"{kind.lower()}/{name}",
        message=str(item.get("message") or ""),
        count=int(item.get("count") or 1),
    )
