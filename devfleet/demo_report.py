"""What the demo shows of its jobs: the live table, the summary, the machine-readable record.

The live table and the summary are for people; `summary_document` is the same facts as
JSON for tests and scripts (`fleetq dev demo --summary-file`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from devfleet.demo_jobs import LOCAL_QUEUE, JobKind
from devfleet.demo_watch import JobRecord, JobState

STATE_STYLE = {
    JobState.WAITING_TO_SUBMIT: "dim",
    JobState.SUBMITTED: "white",
    JobState.QUEUED: "yellow",
    JobState.DISPATCHING: "cyan",
    JobState.RUNNING: "bold blue",
    JobState.SUCCEEDED: "green",
    JobState.FAILED: "bold red",
}


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}s"


def live_table(records: Iterable[JobRecord], now: float) -> Table:
    """One row per job: job, queue, priority, shape, state, worker, waited, ran."""
    rows = list(records)
    done = sum(1 for r in rows if r.state.done)
    table = Table(title=f"jobs on the manager ({done}/{len(rows)} done, {now:.0f}s)")
    for column in ("job", "queue", "priority", "asks", "state", "worker", "waited", "ran"):
        table.add_column(column)
    for record in rows:
        job = record.job
        worker = record.worker or (f"-> {', '.join(record.nominated)}" if record.nominated else "-")
        table.add_row(
            job.key,
            LOCAL_QUEUE,
            job.priority,
            job.shape,
            Text(record.state.value, style=STATE_STYLE[record.state]),
            worker,
            _seconds(record.waited_until(now)),
            _seconds(record.ran_until(now)),
        )
    return table


def summary_table(records: Iterable[JobRecord], now: float) -> Table:
    """Where each job ran and for how long."""
    table = Table(title="summary: where each job ran")
    for column in ("job", "priority", "asks", "worker", "node pool", "nodes", "queued", "ran"):
        table.add_column(column)
    table.add_column("result")
    for record in records:
        nodes = sorted(node.split("/", 1)[1] for node in record.nodes)
        table.add_row(
            record.job.key,
            record.job.priority,
            record.job.shape,
            record.worker or "-",
            ", ".join(sorted(record.pools)) or "-",
            _compact(nodes),
            _seconds(record.waited_until(now)),
            _seconds(record.ran_until(now)),
            Text(record.state.value, style=STATE_STYLE[record.state]),
        )
    return table


def worker_table(records: Iterable[JobRecord], workers: Iterable[str]) -> Table:
    """Per worker: how many jobs (GPU, CPU) and pods it ran."""
    rows = list(records)
    table = Table(title="per worker")
    for column in ("worker", "jobs", "GPU jobs", "CPU jobs", "GPUs (all jobs)"):
        table.add_column(column)
    for worker in workers:
        mine = [r for r in rows if r.worker == worker]
        kinds = Counter(r.job.kind for r in mine)
        gpus = sum(r.job.pods * r.job.per_pod for r in mine if r.job.kind is JobKind.GPU)
        table.add_row(
            worker,
            str(len(mine)),
            str(kinds[JobKind.GPU]),
            str(kinds[JobKind.CPU]),
            str(gpus),
        )
    return table


def _compact(nodes: list[str]) -> str:
    if len(nodes) <= 2:
        return ", ".join(nodes) or "-"
    return f"{nodes[0]}, ... ({len(nodes)} nodes)"


def summary_document(records: Iterable[JobRecord], now: float) -> dict[str, Any]:
    """The summary as plain data (seconds rounded to 0.1)."""
    jobs = []
    for record in records:
        job = record.job
        waited, ran = record.waited_until(now), record.ran_until(now)
        jobs.append(
            {
                "name": job.name,
                "namespace": job.namespace,
                "kind": job.kind.value,
                "priority": job.priority,
                "pods": job.pods,
                "perPod": job.per_pod,
                "state": record.state.value,
                "worker": record.worker,
                "nodes": sorted(record.nodes),
                "nodePools": sorted(record.pools),
                "queuedSeconds": None if waited is None else round(waited, 1),
                "ranSeconds": None if ran is None else round(ran, 1),
                "submittedAt": _rounded(record.submitted),
                "admittedAt": _rounded(record.admitted),
                "finishedAt": _rounded(record.finished),
            }
        )
    return {"jobs": jobs}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
