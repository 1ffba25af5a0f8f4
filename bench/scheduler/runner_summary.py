"""Reads the summary upstream's scheduler-perf runner writes (`summary.yaml`).

The runner is the judge of both managers, so its figures are taken as they are: the
average time to admission counts every workload of a class (one never admitted counts as
0 ms, as upstream's checker counts it), and a ClusterQueue class's usage is the integral
of its `status.flavorsUsage` divided by nominal quota times the monitored time, exactly
the formula of upstream's checker (`test/performance/scheduler/checker`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.api.kube_time import parse_time


class RunnerSummaryError(ValueError):
    """The summary is missing or malformed; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class WorkloadClassFigures:
    """One workload class (the generator's `className`, e.g. small/medium/large)."""

    count: int
    evictions: int
    avg_time_to_admission_s: float
    avg_time_to_finish_s: float


@dataclass(frozen=True, slots=True)
class QueueClassFigures:
    """One ClusterQueue class, summed over its queues."""

    nominal_quota_mcpu: int
    cpu_used_mcpu_ms: int
    """Integral of CPU usage over time: milli-CPU times milliseconds."""
    monitored_ms: int
    """From the class's first ClusterQueue event to its last."""

    @property
    def usage_percent(self) -> float | None:
        """Average share of nominal quota in use; None when nothing was monitored."""
        if self.nominal_quota_mcpu <= 0 or self.monitored_ms <= 0:
            return None
        return self.cpu_used_mcpu_ms * 100.0 / (self.nominal_quota_mcpu * self.monitored_ms)


@dataclass(frozen=True, slots=True)
class RunnerSummary:
    workload_classes: dict[str, WorkloadClassFigures]
    queue_classes: dict[str, QueueClassFigures]
    dropped_events: int
    """Workload events the runner dropped because its channel was full (skews averages)."""

    @property
    def workloads(self) -> int:
        return sum(c.count for c in self.workload_classes.values())

    @property
    def evictions(self) -> int:
        return sum(c.evictions for c in self.workload_classes.values())


def _timestamp(value: Any, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, str):
        try:
            return parse_time(value)
        except ValueError:
            pass
    raise RunnerSummaryError(f"{where}: expected an RFC 3339 timestamp, got {value!r}")


def _integer(raw: dict[str, Any], key: str, where: str) -> int:
    value = raw.get(key, 0)
    if not isinstance(value, int | float):
        raise RunnerSummaryError(f"{where}.{key}: expected a number, got {value!r}")
    return int(value)


def _workload_class(raw: Any, where: str) -> WorkloadClassFigures:
    if not isinstance(raw, dict):
        raise RunnerSummaryError(f"{where}: expected a mapping")
    return WorkloadClassFigures(
        count=_integer(raw, "count", where),
        evictions=_integer(raw, "totalEvictions", where),
        avg_time_to_admission_s=_integer(raw, "averageTimeToAdmissionMs", where) / 1000.0,
        avg_time_to_finish_s=_integer(raw, "averageTimeToFinishMs", where) / 1000.0,
    )


def _queue_class(raw: Any, where: str) -> QueueClassFigures:
    if not isinstance(raw, dict):
        raise RunnerSummaryError(f"{where}: expected a mapping")
    first = _timestamp(raw.get("firstEventTime"), f"{where}.firstEventTime")
    last = _timestamp(raw.get("lastEventTime"), f"{where}.lastEventTime")
    return QueueClassFigures(
        nominal_quota_mcpu=_integer(raw, "nominalQuota", where),
        cpu_used_mcpu_ms=_integer(raw, "cpuUsed", where),
        monitored_ms=round((last - first).total_seconds() * 1000),
    )


def parse_summary(text: str, source: str = "summary.yaml") -> RunnerSummary:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RunnerSummaryError(f"{source} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RunnerSummaryError(f"{source}: expected a mapping at the top")
    workloads = data.get("workloadClasses") or {}
    queues = data.get("clusterQueueClasses") or {}
    if not isinstance(workloads, dict) or not isinstance(queues, dict):
        raise RunnerSummaryError(f"{source}: workloadClasses and clusterQueueClasses are maps")
    return RunnerSummary(
        workload_classes={
            str(name): _workload_class(raw, f"{source}: workloadClasses.{name}")
            for name, raw in sorted(workloads.items())
        },
        queue_classes={
            str(name): _queue_class(raw, f"{source}: clusterQueueClasses.{name}")
            for name, raw in sorted(queues.items())
        },
        dropped_events=_integer(data, "droppedWorkloadEvents", source),
    )


def read_summary(path: Path) -> RunnerSummary:
    try:
        text = path.read_text()
    except OSError as exc:
        raise RunnerSummaryError(f"cannot read the runner's summary {path}: {exc}") from exc
    return parse_summary(text, str(path))


@dataclass(frozen=True, slots=True)
class Stragglers:
    """Workloads a run left behind, per class: the summary's averages count them as 0 ms."""

    never_admitted: dict[str, int]
    not_finished: dict[str, int]


def parse_workload_states(text: str, source: str = "wlStates.csv") -> Stragglers:
    """Count, from the runner's per-workload CSV, who was never admitted or never finished."""
    rows = csv.DictReader(io.StringIO(text))
    needed = {"class name", "ms to admitted", "ms to finish"}
    if rows.fieldnames is None or not needed <= set(rows.fieldnames):
        raise RunnerSummaryError(f"{source}: expected columns {', '.join(sorted(needed))}")
    never_admitted: Counter[str] = Counter()
    not_finished: Counter[str] = Counter()
    for row in rows:
        name = row["class name"]
        finished = row["ms to finish"] != "0"
        # 0 ms to admission with a finish: first seen already admitted (the runner's
        # recorder started after the manager's first admission), not a straggler.
        never_admitted[name] += row["ms to admitted"] == "0" and not finished
        not_finished[name] += not finished
    return Stragglers(dict(sorted(never_admitted.items())), dict(sorted(not_finished.items())))


def read_workload_states(path: Path) -> Stragglers:
    try:
        text = path.read_text()
    except OSError as exc:
        raise RunnerSummaryError(f"cannot read the runner's workload states {path}: {exc}") from exc
    return parse_workload_states(text, str(path))
