"""The workloads table's rows, kept per Workload version so a rebuild reads only what changed.

The workloads and fleet views are rebuilt on every Workload change, and with 10,000
Workloads decoding each one and reading its conditions again on every build took most of
the build (bench/dashboard). `WorkloadRows` keeps, per Workload (its uid, else
namespace/name), what its row shows that depends on that Workload alone (`RowParts`),
with the resourceVersion it was read from; `refresh` decodes only the Workloads whose
version moved and forgets the ones gone from the cache. What depends on more than the
Workload is added when a view is built (`finish_row`): its ClusterQueue when no admission
names one (its LocalQueue's target), its queue position (the engine's), and the durations
up to now, so a row kept from an earlier build is never stale.

A Workload without a resourceVersion (test doubles) is read again on every refresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cli.ops.workload_phase import WorkloadPhase, dispatched_to, workload_phase
from cli.ops.workload_story import pending_reason
from core.api.codec import decode
from core.api.json_types import Json
from core.api.meta import ConditionStatus
from core.api.workload import Workload

LocalQueueTargets = dict[tuple[str, str], str]
"""(namespace, LocalQueue) → the ClusterQueue it points to."""


@dataclass(frozen=True, slots=True)
class RowParts:
    """What one version of a Workload puts in its row, whatever else changes."""

    key: str
    """namespace/name, as the engine's queue positions name it."""
    namespace: str
    name: str
    phase: WorkloadPhase
    local_queue: str
    admitted_to: str | None
    """The ClusterQueue its admission names; None without an admission (then its
    LocalQueue's target is shown, which can change without the Workload changing)."""
    why: str
    priority: int
    worker: str
    running_on: str
    """status.clusterName ("" for none): where an admitted Workload runs."""
    created: str | None
    created_at: datetime | None
    reserved_at: datetime | None
    admitted_at: datetime | None
    finished_at: datetime | None
    order: tuple[str, str, str]
    """The table's order: (created, namespace, name), newest first when sorted in reverse."""

    def cluster_queue(self, targets: LocalQueueTargets) -> str:
        """The ClusterQueue holding its reservation, else the one its LocalQueue points to
        (`cli.ops.workload_phase.cluster_queue_of`)."""
        if self.admitted_to is not None:
            return self.admitted_to
        return targets.get((self.namespace, self.local_queue), "")


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def row_parts(workload: Workload) -> RowParts:
    meta = workload.metadata
    phase = workload_phase(workload)
    conditions = {c.type: c for c in workload.status.conditions}

    def since(kind: str) -> datetime | None:
        found = conditions.get(kind)
        return (
            found.last_transition_time if found and found.status is ConditionStatus.TRUE else None
        )

    admission = workload.status.admission
    created = iso(meta.creation_timestamp)
    return RowParts(
        key=f"{meta.namespace}/{meta.name}",
        namespace=meta.namespace,
        name=meta.name,
        phase=phase,
        local_queue=workload.spec.queue_name,
        admitted_to=None if admission is None else admission.cluster_queue,
        why=pending_reason(workload) if phase in ("pending", "evicted") else "",
        priority=workload.spec.priority or 0,
        worker=dispatched_to(workload),
        running_on=workload.status.cluster_name or "",
        created=created,
        created_at=meta.creation_timestamp,
        reserved_at=since("QuotaReserved"),
        admitted_at=since("Admitted"),
        finished_at=since("Finished"),
        order=(created or "", meta.namespace, meta.name),
    )


def _seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def finish_row(
    parts: RowParts, targets: LocalQueueTargets, positions: dict[str, int], now: datetime
) -> dict[str, Any]:
    """The row the page shows: `parts` plus what depends on the queues, the engine and now."""
    return {
        "namespace": parts.namespace,
        "name": parts.name,
        "state": str(parts.phase),
        "localQueue": parts.local_queue,
        "clusterQueue": parts.cluster_queue(targets),
        "position": positions.get(parts.key),
        "why": parts.why,
        "priority": parts.priority,
        "worker": parts.worker,
        "created": parts.created,
        "waitedSeconds": _seconds_between(parts.created_at, parts.reserved_at or now),
        "ranSeconds": _seconds_between(parts.admitted_at, parts.finished_at or now),
    }


def _cache_key(meta: Json) -> str:
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


class WorkloadRows:
    """`RowParts` per Workload, read again only when its resourceVersion moved."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[str, RowParts]] = {}
        self.decodes = 0
        """Workloads decoded so far (for tests and the benchmark's reading)."""

    def __len__(self) -> int:
        return len(self._kept)

    def refresh(self, raws: Iterable[Json]) -> Sequence[RowParts]:
        """Every Workload's parts, in `raws`' order; kept ones reused, gone ones forgotten."""
        kept = self._kept
        now_kept: dict[str, tuple[str, RowParts]] = {}
        out: list[RowParts] = []
        for raw in raws:
            meta = raw.get("metadata") or {}
            version = str(meta.get("resourceVersion") or "")
            key = _cache_key(meta)
            found = kept.get(key)
            if found is None or not version or found[0] != version:
                found = (version, row_parts(decode(Workload, raw)))
                self.decodes += 1
            now_kept[key] = found
            out.append(found[1])
        self._kept = now_kept
        return out
