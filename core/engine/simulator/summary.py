"""The figures a simulation reports, named and computed the way upstream's runner does.

Upstream's performance runner summarises per workload class (count, evictions, average time
from creation to ``Admitted``) and per ClusterQueue class (average CPU usage as a share of
nominal quota over the monitored time); the wall time of the run comes from the manager
process. The simulator reports the same figures plus a few of its own (cycles, API writes)
so a run can be put side by side with upstream's published averages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.engine.quantity import format_quantity


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadClassSummary:
    """Figures for every workload of one ``className``."""

    class_name: str
    count: int
    admitted: int
    """Workloads admitted at least once."""
    finished: int
    evictions: int
    avg_time_to_admission_s: float
    """Creation to the last ``Admitted`` the runner saw, averaged over admitted workloads."""
    avg_time_to_finish_s: float
    """Creation to ``Finished``, averaged over finished workloads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueClassSummary:
    """Figures for every ClusterQueue of one ``className``."""

    class_name: str
    queues: int
    nominal_milli: int
    """Sum of the nominal CPU quota of the class's queues."""
    cpu_seconds_used: float
    """Integral of admitted CPU over the run, in CPU-seconds."""
    max_usage_milli: int
    """Largest CPU admitted at one instant in a single queue of the class."""
    avg_usage: float
    """``cpu_seconds_used / (nominal * monitored time)``: 1.0 means always fully used."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationSummary:
    """Everything ``run_simulation`` reports about one run."""

    model: str
    """Name of the manager model the run used (see ``manager_model``)."""
    workload_classes: tuple[WorkloadClassSummary, ...]
    queue_classes: tuple[QueueClassSummary, ...]
    makespan_s: float
    """Virtual time from the start until the last workload finished (or the run stopped)."""
    workloads: int
    unfinished: int
    """Workloads never finished: never admissible, or cut off by ``until_s``."""
    cycles: int
    """Scheduling cycles that had at least one head."""
    admissions: int
    preemptions: int
    api_writes: int
    """Manager writes the model charged against the API budget."""


def format_summary(summary: SimulationSummary) -> str:
    """A plain-text report: the workload class table, the queue class table, the totals."""
    lines = [f"simulation ({summary.model} manager model)", ""]
    wl_rows = [
        (
            wc.class_name,
            str(wc.count),
            str(wc.admitted),
            str(wc.finished),
            str(wc.evictions),
            f"{wc.avg_time_to_admission_s:.3f}",
            f"{wc.avg_time_to_finish_s:.3f}",
        )
        for wc in summary.workload_classes
    ]
    lines += _table(
        (
            "workload class",
            "count",
            "admitted",
            "finished",
            "evictions",
            "avg admit s",
            "avg done s",
        ),
        wl_rows,
    )
    lines.append("")
    cq_rows = [
        (
            qc.class_name,
            str(qc.queues),
            format_quantity("cpu", qc.nominal_milli),
            f"{qc.cpu_seconds_used:.1f}",
            format_quantity("cpu", qc.max_usage_milli),
            f"{qc.avg_usage * 100:.1f} %",
        )
        for qc in summary.queue_classes
    ]
    lines += _table(
        ("queue class", "queues", "nominal cpu", "cpu·s used", "max cpu", "avg usage"), cq_rows
    )
    lines.append("")
    lines.append(
        f"makespan {summary.makespan_s:.3f} s · workloads {summary.workloads} "
        f"(unfinished {summary.unfinished}) · cycles {summary.cycles} · "
        f"admissions {summary.admissions} · preemptions {summary.preemptions} · "
        f"api writes {summary.api_writes}"
    )
    return "\n".join(lines)


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def render(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return [render(header), render(tuple("-" * w for w in widths)), *map(render, rows)]
