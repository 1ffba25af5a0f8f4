"""What the demo shows of its jobs: the live table, the summary, the machine-readable record.

A job is a batch/v1 Job, a JobSet or a serving Deployment (the `kind` column); a JobSet's
asks name its driver and its workers ("1 CPU + 4x4 GPU"), and the summary lists every node
its pods ran on.

The live table and the summary are for people; `summary_document` is the same facts as
JSON for tests and scripts (`fleetq dev demo --summary-file`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from devfleet.demo_jobs import LOCAL_QUEUE, JobApi, JobKind
from devfleet.demo_watch import JobRecord, JobState

STATE_STYLE = {
    JobState.WAITING_TO_SUBMIT: "dim",
    JobState.SUBMITTED: "white",
    JobState.QUEUED: "yellow",
    JobState.DISPATCHING: "cyan",
    JobState.RUNNING: "bold blue",
    JobState.SERVING: "bold magenta",
    JobState.SUCCEEDED: "green",
    JobState.FAILED: "bold red",
}


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}s"


def live_table(records: Iterable[JobRecord], now: float) -> Table:
    """One row per job: job, kind, queue, priority, shape, state, worker, waited, ran."""
    rows = list(records)
    done = sum(1 for r in rows if r.state.done)
    table = Table(title=f"jobs on the manager ({done}/{len(rows)} done, {now:.0f}s)")
    columns = ("job", "kind", "queue", "priority", "asks", "state", "worker", "waited", "ran")
    for column in columns:
        table.add_column(column)
    for record in rows:
        job = record.job
        worker = record.worker or (f"-> {', '.join(record.nominated)}" if record.nominated else "-")
        table.add_row(
            job.key,
            job.api.value,
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
    """Where each job ran (worker, node pool, every node its pods ran on) and for how long."""
    table = Table(title="summary: where each job ran")
    columns = ("job", "kind", "priority", "asks", "worker", "node pool", "nodes", "queued", "ran")
    for column in columns:
        table.add_column(column)
    table.add_column("result")
    for record in records:
        table.add_row(
            record.job.key,
            record.job.api.value,
            record.job.priority,
            record.job.shape,
            record.worker or "-",
            ", ".join(sorted(record.pools)) or "-",
            nodes_shown(record.nodes),
            _seconds(record.waited_until(now)),
            _seconds(record.ran_until(now)),
            Text(record.state.value, style=STATE_STYLE[record.state]),
        )
    return table


def worker_table(records: Iterable[JobRecord], workers: Iterable[str]) -> Table:
    """Per worker: how many jobs it ran (GPU, CPU; of them JobSets) and their GPUs."""
    rows = list(records)
    table = Table(title="per worker")
    for column in ("worker", "jobs", "GPU jobs", "CPU jobs", "JobSets", "GPUs (all jobs)"):
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
            str(sum(r.job.api is JobApi.JOBSET for r in mine)),
            str(gpus),
        )
    return table


def nodes_shown(nodes: Iterable[str]) -> str:
    """Every distinct node of "worker/node" names, without the worker's name where the
    node's name starts with it (the worker has its own column): "gpu-0, gpu-2"."""
    shown = set()
    for entry in nodes:
        worker, _, node = entry.partition("/")
        shown.add(node.removeprefix(f"{worker}-"))
    return ", ".join(sorted(shown)) or "-"


def summary_document(records: Iterable[JobRecord], now: float) -> dict[str, Any]:
    """The summary as plain data (seconds rounded to 0.1)."""
    jobs = []
    for record in records:
        job = record.job
        waited, ran = record.waited_until(now), record.ran_until(now)
        entry: dict[str, Any] = {
            "name": job.name,
            "namespace": job.namespace,
            "kind": job.kind.value,
            "apiKind": job.api.kind,
            "priority": job.priority,
            "asks": job.shape,
            "pods": job.pods,
            "perPod": job.per_pod,
            "driverPods": job.drivers,
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
        if job.api is JobApi.JOBSET:
            entry["replicatedJobNodes"] = {
                name: sorted(nodes) for name, nodes in sorted(record.replicated_nodes.items())
            }
        jobs.append(entry)
    return {"jobs": jobs}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
