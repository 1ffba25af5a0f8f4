"""What the simulated test runner observes, turned into a ``SimulationSummary``.

Mirrors upstream's runner recorder: a workload's time to admission is measured from its
creation to the *last* time it was seen ``Admitted`` (a re-admission after an eviction
overwrites the earlier one); evictions are counted each time one is seen; a queue's usage
is the integral of its admitted CPU over time, divided by nominal quota times the monitored
time (from the start of the run to its end).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.engine.simulator.generator import QueueSpec, WorkloadArrival
from core.engine.simulator.summary import (
    QueueClassSummary,
    SimulationSummary,
    WorkloadClassSummary,
)


@dataclass(slots=True)
class _WorkloadRecord:
    class_name: str
    created_s: float
    admitted_s: float | None = None
    finished_s: float | None = None
    evictions: int = 0


@dataclass(slots=True)
class _QueueRecord:
    class_name: str
    nominal_milli: int
    usage_milli: int = 0
    max_usage_milli: int = 0
    since_s: float = 0.0
    used_milli_s: float = 0.0


class Recorder:
    """Accumulates observations during a run; ``summary()`` produces the report."""

    __slots__ = ("_queue_order", "_queues", "_workload_order", "_workloads")

    def __init__(self, queues: tuple[QueueSpec, ...], arrivals: tuple[WorkloadArrival, ...]):
        self._queues = {q.name: _QueueRecord(q.class_name, q.nominal_milli) for q in queues}
        self._queue_order = _first_seen_order(q.class_name for q in queues)
        self._workloads: dict[str, _WorkloadRecord] = {}
        self._workload_order = _first_seen_order(a.class_name for a in arrivals)

    def created(self, key: str, class_name: str, now: float) -> None:
        self._workloads[key] = _WorkloadRecord(class_name, now)

    def admitted(self, key: str, now: float) -> None:
        self._workloads[key].admitted_s = now

    def evicted(self, key: str) -> None:
        self._workloads[key].evictions += 1

    def finished(self, key: str, now: float) -> None:
        self._workloads[key].finished_s = now

    def usage_changed(self, cluster_queue: str, delta_milli: int, now: float) -> None:
        """Quota taken (positive) or given back (negative) in a queue at ``now``."""
        record = self._queues[cluster_queue]
        record.used_milli_s += record.usage_milli * (now - record.since_s)
        record.since_s = now
        record.usage_milli += delta_milli
        record.max_usage_milli = max(record.max_usage_milli, record.usage_milli)

    def summary(
        self,
        *,
        model: str,
        end_s: float,
        cycles: int,
        admissions: int,
        preemptions: int,
        api_writes: int,
    ) -> SimulationSummary:
        for record in self._queues.values():
            _close_integral(record, end_s)
        workloads = list(self._workloads.values())
        queues = list(self._queues.values())
        return SimulationSummary(
            model=model,
            workload_classes=tuple(
                _workload_class(name, [w for w in workloads if w.class_name == name])
                for name in self._workload_order
            ),
            queue_classes=tuple(
                _queue_class(name, [q for q in queues if q.class_name == name], end_s)
                for name in self._queue_order
            ),
            makespan_s=end_s,
            workloads=len(workloads),
            unfinished=sum(1 for w in workloads if w.finished_s is None),
            cycles=cycles,
            admissions=admissions,
            preemptions=preemptions,
            api_writes=api_writes,
        )


def _close_integral(record: _QueueRecord, end_s: float) -> None:
    """Add the usage held from the last change up to the end of the run."""
    if end_s > record.since_s:
        record.used_milli_s += record.usage_milli * (end_s - record.since_s)
        record.since_s = end_s


def _first_seen_order(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _workload_class(name: str, records: list[_WorkloadRecord]) -> WorkloadClassSummary:
    admitted = [w.admitted_s - w.created_s for w in records if w.admitted_s is not None]
    finished = [w.finished_s - w.created_s for w in records if w.finished_s is not None]
    return WorkloadClassSummary(
        class_name=name,
        count=len(records),
        admitted=len(admitted),
        finished=len(finished),
        evictions=sum(w.evictions for w in records),
        avg_time_to_admission_s=_mean(admitted),
        avg_time_to_finish_s=_mean(finished),
    )


def _queue_class(name: str, records: list[_QueueRecord], end_s: float) -> QueueClassSummary:
    nominal = sum(q.nominal_milli for q in records)
    used_milli_s = sum(q.used_milli_s for q in records)
    denominator = nominal * end_s
    return QueueClassSummary(
        class_name=name,
        queues=len(records),
        nominal_milli=nominal,
        cpu_seconds_used=used_milli_s / 1000.0,
        max_usage_milli=max((q.max_usage_milli for q in records), default=0),
        avg_usage=used_milli_s / denominator if denominator > 0 else 0.0,
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
