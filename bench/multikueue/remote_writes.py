"""Counts the manager's writes on the workers from the workers' apiserver audit logs.

Each manager reaches the workers as its own ServiceAccount (`worker_identity`), while the
worker's local Kueue (the fleetq agent or upstream's kueue) uses the admin certificate, so
the audit event's user name says who wrote: exactly the manager's remote writes, counted
the same way for both managers whatever they count themselves. The policy and the verbs
are the scheduler benchmark's (`bench/scheduler/audit_writes.py`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench.scheduler.audit_writes import WRITE_VERBS


class _User(msgspec.Struct):
    username: str = ""


class _ObjectRef(msgspec.Struct):
    resource: str = ""
    subresource: str = ""
    name: str = ""


class _Event(msgspec.Struct, rename="camel"):
    verb: str = ""
    stage: str = ""
    user: _User | None = None
    object_ref: _ObjectRef | None = None
    stage_timestamp: dt.datetime | None = None


_decoder = msgspec.json.Decoder(_Event)


@dataclass(frozen=True, slots=True)
class RemoteWriteTally:
    """The manager's writes on all workers in a window, by `verb resource` and by Job."""

    by_kind: dict[str, int]
    by_job: dict[str, int]
    """Writes to a Job or its Workload (`job-<name>-<hash>`), by the Job's name."""

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def per_job(self, names: Iterable[str]) -> float:
        """Mean writes for these Jobs: every write their dispatch cost, and only theirs,
        whether or not other Jobs were still in flight when the window closed."""
        chosen = list(names)
        return sum(self.by_job.get(name, 0) for name in chosen) / len(chosen) if chosen else 0.0


def job_of(resource: str, name: str) -> str | None:
    """The Job a written object belongs to (Workloads are named `job-<job>-<5 hex>`)."""
    if resource.startswith("jobs"):
        return name
    if resource.startswith("workloads") and name.startswith("job-"):
        stem, _, digest = name[4:].rpartition("-")
        return stem if stem and len(digest) == 5 else None
    return None


def count_remote_writes(
    paths: Iterable[Path], *, username: str, since: dt.datetime, until: dt.datetime
) -> RemoteWriteTally:
    """Writes finished by `username` between `since` and `until` (inclusive)."""
    counts: Counter[str] = Counter()
    jobs: Counter[str] = Counter()
    for path in paths:
        with path.open("rb") as lines:
            for line in lines:
                try:
                    event = _decoder.decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if event.verb not in WRITE_VERBS or event.stage != "ResponseComplete":
                    continue
                if event.user is None or event.user.username != username:
                    continue
                at = event.stage_timestamp
                if at is None or at < since or at > until:
                    continue
                ref = event.object_ref or _ObjectRef()
                resource = f"{ref.resource}/{ref.subresource}" if ref.subresource else ref.resource
                counts[f"{event.verb} {resource}"] += 1
                owner = job_of(resource, ref.name)
                if owner is not None:
                    jobs[owner] += 1
    return RemoteWriteTally(dict(sorted(counts.items())), dict(jobs))
