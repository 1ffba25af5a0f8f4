"""The dashboard's views as JSON, built from a `DashboardSource` on each request or push.

Each view is a plain dict the browser renders as is: numbers for bars (quantities as
floats in the resource's unit, beside their text), words for states, and the stories
`fleetq describe` tells (`cli.ops.workload_story`, the one definition of a workload's
phase, pending reason and timeline). Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

import yaml

from cli.ops.workload_phase import WorkloadPhase
from cli.ops.workload_story import story_steps
from core.api.codec import decode
from core.api.json_types import Json
from core.api.quantity import QuantityError, parse_quantity
from core.api.workload import Workload
from hub.dashboard.source import DashboardSource, WorkerSummary
from hub.dashboard.workload_rows import (
    LocalQueueTargets,
    RowParts,
    WorkloadRows,
    finish_row,
    iso,
    row_parts,
)

VIEWS = ("fleet", "queues", "history", "workloads", "workload", "flavors")
WORKLOAD_ROWS_LIMIT = 2000
"""At most this many rows in the workloads table (the newest first); counts stay exact."""


def decoded_workload(raw: Json) -> Workload:
    """`raw` as a Workload (the views' rows are kept per version in `WorkloadRows`)."""
    return decode(Workload, raw)


def _number(quantity: object) -> float:
    try:
        return float(parse_quantity(str(quantity)))
    except (QuantityError, ValueError):
        return 0.0


def _bars(allocatable: Json, used: Json) -> list[dict[str, Any]]:
    out = []
    for resource in sorted(allocatable):
        total = _number(allocatable[resource])
        taken = _number(used.get(resource, "0"))
        out.append(
            {
                "resource": resource,
                "total": total,
                "used": taken,
                "free": max(0.0, total - taken),
                "totalText": str(allocatable[resource]),
                "usedText": str(used.get(resource, "0")),
            }
        )
    return out


def _worker(worker: WorkerSummary, now: datetime) -> dict[str, Any]:
    report = worker.report
    flavors: list[dict[str, Any]] = []
    observed = None
    if report is not None:
        observed = report.status.observed_time
        for flavor in report.status.flavors:
            flavors.append(
                {
                    "name": flavor.name,
                    "nodes": flavor.node_count,
                    "bars": _bars(dict(flavor.allocatable), dict(flavor.requested)),
                    "largestFreeBlocks": [
                        {k: str(v) for k, v in block.items()}
                        for block in flavor.largest_free_blocks
                    ],
                }
            )
    return {
        "name": worker.name,
        "connected": worker.connected,
        "phase": worker.phase,
        "reason": worker.reason,
        "since": iso(worker.since),
        "reportAgeSeconds": None if observed is None else (now - observed).total_seconds(),
        "flavors": flavors,
        "running": 0,
    }


def fleet_view(
    source: DashboardSource, now: datetime, rows: WorkloadRows | None = None
) -> dict[str, Any]:
    """`rows`: the Workloads' rows kept from earlier builds (a fresh set without)."""
    workers = source.workers()
    running: dict[str, int] = {}
    for parts in (WorkloadRows() if rows is None else rows).refresh(source.workloads()):
        if parts.phase is WorkloadPhase.ADMITTED and parts.running_on:
            running[parts.running_on] = running.get(parts.running_on, 0) + 1
    out = []
    for worker in workers or ():
        row = _worker(worker, now)
        row["running"] = running.get(worker.name, 0)
        out.append(row)
    return {"leader": workers is not None, "workers": out}


def _meta(obj: Json) -> Json:
    return obj.get("metadata") or {}


def _usage_rows(status: Json, spec: Json) -> list[dict[str, Any]]:
    """Per flavor and resource: nominal, reserved, borrowed (for the queue bars)."""
    nominal: dict[tuple[str, str], Any] = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                nominal[(flavor.get("name"), resource.get("name"))] = resource.get("nominalQuota")
    out = []
    for flavor in status.get("flavorsReservation") or ():
        for resource in flavor.get("resources") or ():
            key = (flavor.get("name"), resource.get("name"))
            out.append(
                {
                    "flavor": key[0],
                    "resource": key[1],
                    "nominal": _number(nominal.get(key, "0")),
                    "reserved": _number(resource.get("total", "0")),
                    "borrowed": _number(resource.get("borrowed", "0")),
                    "nominalText": str(nominal.get(key, "0")),
                    "reservedText": str(resource.get("total", "0")),
                }
            )
    return out


def _active(status: Json) -> tuple[bool, str]:
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Active":
            return condition.get("status") == "True", str(condition.get("reason") or "")
    return False, "Unknown"


def _queue_state(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """What ClusterQueues and LocalQueues both show: Active, stop policy, workload counts."""
    active, reason = _active(status)
    return {
        "active": active,
        "reason": reason,
        "stopPolicy": spec.get("stopPolicy") or "None",
        "pending": status.get("pendingWorkloads", 0),
        "reserving": status.get("reservingWorkloads", 0),
        "admitted": status.get("admittedWorkloads", 0),
    }


def _fair_share(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """A Cohort's or ClusterQueue's fair-sharing weight and its current weighted share."""
    return {
        "weight": (spec.get("fairSharing") or {}).get("weight"),
        "weightedShare": (status.get("fairSharing") or {}).get("weightedShare"),
    }


def queues_view(source: DashboardSource) -> dict[str, Any]:
    cohorts = []
    for cohort in source.cohorts():
        spec, status = cohort.get("spec") or {}, cohort.get("status") or {}
        cohorts.append(
            {
                "name": _meta(cohort).get("name"),
                "parent": spec.get("parentName") or "",
                **_fair_share(spec, status),
            }
        )
    cluster_queues = []
    for cq in source.cluster_queues():
        spec, status = cq.get("spec") or {}, cq.get("status") or {}
        cluster_queues.append(
            {
                "name": _meta(cq).get("name"),
                "cohort": spec.get("cohortName") or "",
                **_queue_state(spec, status),
                **_fair_share(spec, status),
                "usage": _usage_rows(status, spec),
            }
        )
    local_queues = []
    for lq in source.local_queues():
        spec, status = lq.get("spec") or {}, lq.get("status") or {}
        local_queues.append(
            {
                "namespace": _meta(lq).get("namespace"),
                "name": _meta(lq).get("name"),
                "clusterQueue": spec.get("clusterQueue") or "",
                **_queue_state(spec, status),
            }
        )
    key = lambda row: (row.get("namespace") or "", row["name"] or "")  # noqa: E731
    return {
        "cohorts": sorted(cohorts, key=key),
        "clusterQueues": sorted(cluster_queues, key=key),
        "localQueues": sorted(local_queues, key=key),
    }


def _local_queue_targets(source: DashboardSource) -> LocalQueueTargets:
    return {
        (str(_meta(lq).get("namespace")), str(_meta(lq).get("name"))): str(
            (lq.get("spec") or {}).get("clusterQueue") or ""
        )
        for lq in source.local_queues()
    }


def _row(
    workload: Workload,
    targets: LocalQueueTargets,
    positions: dict[str, int],
    now: datetime,
) -> dict[str, Any]:
    return finish_row(row_parts(workload), targets, positions, now)


GROUP_BY = ("clusterQueue", "localQueue", "state", "worker")
"""Row fields the workloads table can be grouped by; every group's count is exact."""


def group_counts(
    shown: Sequence[RowParts], targets: LocalQueueTargets
) -> dict[str, dict[str, int]]:
    """Per `GROUP_BY` field: value → how many of the rows `shown` have it ("" for none),
    each field's values in the order they first appear. Counted per distinct
    (clusterQueue, localQueue, state, worker) first, without building the rows."""
    combos: dict[tuple[str, str, str, str], int] = {}
    for parts in shown:
        combo = (
            parts.cluster_queue(targets) or "",
            parts.local_queue or "",
            str(parts.phase),
            parts.worker or "",
        )
        combos[combo] = combos.get(combo, 0) + 1
    out: dict[str, dict[str, int]] = {field: {} for field in GROUP_BY}
    for index, counts in enumerate(out.values()):
        for combo, count in combos.items():
            counts[combo[index]] = counts.get(combo[index], 0) + count
    return out


def workloads_view(
    source: DashboardSource,
    now: datetime,
    namespace: str | None = None,
    rows: WorkloadRows | None = None,
) -> dict[str, Any]:
    """`rows`: the Workloads' rows kept from earlier builds (a fresh set without); only the
    rows sent are finished (queue, position, durations up to `now`)."""
    targets = _local_queue_targets(source)
    every = (WorkloadRows() if rows is None else rows).refresh(source.workloads())
    shown = [p for p in every if p.namespace == namespace] if namespace else list(every)
    groups = group_counts(shown, targets)
    shown.sort(key=attrgetter("order"), reverse=True)
    positions = source.queue_positions()
    return {
        "counts": groups["state"],
        "groups": groups,
        "total": len(shown),
        "rows": [finish_row(p, targets, positions, now) for p in shown[:WORKLOAD_ROWS_LIMIT]],
    }


def workload_view(
    source: DashboardSource, namespace: str, name: str, now: datetime
) -> dict[str, Any] | None:
    raw = source.workload(namespace, name)
    if raw is None:
        return None
    workload = decoded_workload(raw)
    targets = _local_queue_targets(source)
    steps = [
        {"time": iso(step.time), "step": step.step, "detail": step.detail}
        for step in story_steps(workload, targets)
    ]
    conditions = [
        {
            "type": c.type,
            "status": c.status.value,
            "reason": c.reason,
            "message": c.message,
            "time": iso(c.last_transition_time),
        }
        for c in workload.status.conditions
    ]
    ref = workload.spec.priority_class_ref
    return {
        "summary": _row(workload, targets, source.queue_positions(), now),
        "priorityClass": None if ref is None else {"kind": str(ref.kind), "name": ref.name},
        "timeline": steps,
        "conditions": conditions,
        "yaml": yaml.safe_dump(raw, sort_keys=False),
    }


def flavors_view(source: DashboardSource) -> dict[str, Any]:
    per_worker: dict[str, list[dict[str, Any]]] = {}
    for worker in source.workers() or ():
        if worker.report is None:
            continue
        for capacity in worker.report.status.flavors:
            per_worker.setdefault(capacity.name, []).append(
                {"worker": worker.name, "nodes": capacity.node_count}
            )
    flavors = []
    for flavor in source.resource_flavors():
        spec = flavor.get("spec") or {}
        name = str(_meta(flavor).get("name"))
        flavors.append(
            {
                "name": name,
                "nodeLabels": spec.get("nodeLabels") or {},
                "taints": [t.get("key") for t in spec.get("nodeTaints") or ()],
                "topology": spec.get("topologyName") or "",
                "workers": per_worker.get(name, []),
            }
        )
    return {"flavors": sorted(flavors, key=lambda f: f["name"])}
