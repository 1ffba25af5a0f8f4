"""`fleetq status`: the fleet at a glance — workers (connected? capacity? report age?) and queues.

Exit status: 0 when the manager answered (unreachable workers are shown, not fatal),
1 when the manager cannot be read, 2 for an unusable kubeconfig or context.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cli.ops.manager_target import add_cluster_options, add_hub_namespace_option, manager_target
from cli.ops.ops_errors import OpsError
from cli.ops.output_format import (
    OutputFormat,
    add_output_option,
    age_text,
    print_document,
    table_console,
)

if TYPE_CHECKING:  # the worker access chain pulls in the async client; load it only to run
    from cli.ops.fleet_status import ClusterQueueView, FleetStatus, WorkerView


def register(commands: Any) -> None:
    status = commands.add_parser(
        "status",
        help="workers (connection, capacity, last report) and queues (pending, admitted, usage)",
        description="Show every worker the manager knows (its MultiKueueCluster's Active "
        "condition and the capacity its agent last reported, read through the worker's "
        "kubeconfig Secret) and every queue (pending, admitted, usage against quota). "
        "LocalQueues of the namespace (-n) or of all (-A).",
    )
    add_cluster_options(status)
    add_hub_namespace_option(status)
    add_output_option(status)
    status.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    from cli.ops.fleet_status import gather_status

    try:
        target = manager_target(args)
        with target.rest() as manager:
            status = gather_status(
                manager,
                namespace=target.namespace,
                hub_namespace=args.hub_namespace,
                now=datetime.now(UTC),
            )
    except OpsError as error:
        print(f"fleetq status: {error}", file=sys.stderr)
        return error.status
    if args.output is OutputFormat.TABLE:
        print_status(status)
    else:
        print_document(status, args.output)
    return 0


def print_status(status: FleetStatus) -> None:
    from rich.table import Table

    console = table_console()
    workers = Table(title="workers", title_justify="left")
    for column in ("WORKER", "ACTIVE", "REPORT AGE", "FLAVOR", "NODES", "USED/ALLOCATABLE", "FREE"):
        workers.add_column(column, justify="right" if column == "NODES" else "left")
    for worker in status.workers:
        for row in worker_rows(worker):
            workers.add_row(*row)
    if not status.workers:
        workers.add_row("(none)", "", "", "", "", "", "")
    console.print(workers)
    for line in worker_notes(status.workers):
        console.print(line, soft_wrap=True)

    queues = Table(title="cluster queues", title_justify="left")
    for column in ("CLUSTERQUEUE", "COHORT", "STATE", *_COUNTS):
        queues.add_column(column, justify="right" if column in _COUNTS else "left")
    queues.add_column("USED/QUOTA")
    for queue in status.cluster_queues:
        queues.add_row(
            queue.name,
            queue.cohort or "-",
            queue_state(queue.stop_policy, queue.active),
            str(queue.pending),
            str(queue.reserving),
            str(queue.admitted),
            quota_text(queue),
        )
    console.print(queues)

    local = Table(title="local queues", title_justify="left")
    for column in ("NAMESPACE", "LOCALQUEUE", "CLUSTERQUEUE", "STATE", *_COUNTS):
        local.add_column(column, justify="right" if column in _COUNTS else "left")
    for lq in status.local_queues:
        local.add_row(
            lq.namespace,
            lq.name,
            lq.cluster_queue,
            queue_state(lq.stop_policy, ""),
            str(lq.pending),
            str(lq.reserving),
            str(lq.admitted),
        )
    console.print(local)


_COUNTS = ("PENDING", "RESERVING", "ADMITTED")


def worker_rows(worker: WorkerView) -> list[tuple[str, ...]]:
    """One row per reported flavor (a line per resource); one row with the problem if none."""
    active = "yes" if worker.active == "True" else f"no\n{worker.reason or worker.active}"
    if worker.active == "Unknown":
        active = "unknown"
    if worker.reachability.problem:
        return [(worker.name, active, worker.reachability.problem, "", "", "", "")]
    age = age_text(worker.report_age_seconds)
    if not worker.flavors:
        return [(worker.name, active, age, "(no flavors)", "", "", "")]
    rows: list[tuple[str, ...]] = []
    for index, flavor in enumerate(worker.flavors):
        first = index == 0
        used = "\n".join(
            f"{resource} {flavor.requested.get(resource, '0')}/{total}"
            for resource, total in flavor.allocatable.items()
        )
        free = "\n".join(f"{resource} {amount}" for resource, amount in flavor.free.items())
        rows.append(
            (
                worker.name if first else "",
                active if first else "",
                age if first else "",
                flavor.flavor,
                str(flavor.nodes),
                used,
                free,
            )
        )
    return rows


def worker_notes(workers: list[WorkerView]) -> list[str]:
    """The full story behind a problem cell: the hub's verdict and what the CLI saw."""
    notes: list[str] = []
    for worker in workers:
        if worker.active == "False":
            notes.append(f"{worker.name}: hub says {worker.reason}: {worker.message}")
        detail = worker.reachability.detail
        if worker.reachability.problem and detail:
            detail = detail.removeprefix(f"{worker.name}: ").removeprefix("worker ")
            detail = detail.removeprefix(f"{worker.name}: ")
            notes.append(f"{worker.name}: {detail}")
    return notes


def queue_state(stop_policy: str, active_reason: str) -> str:
    if stop_policy and stop_policy != "None":
        return f"stopped ({stop_policy})"
    if active_reason and active_reason not in ("Ready", "Unknown"):
        return f"inactive ({active_reason})"
    return "active"


def quota_text(queue: ClusterQueueView) -> str:
    by_flavor: dict[str, list[str]] = {}
    for use in queue.usage:
        by_flavor.setdefault(use.flavor, []).append(f"{use.resource} {use.used}/{use.quota}")
    return "\n".join(f"{flavor}: {', '.join(parts)}" for flavor, parts in by_flavor.items())
