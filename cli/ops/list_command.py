"""`fleetq list workloads`: Workloads with their status, queue positions and worker.

Exit status: 0 (also when nothing matches), 1 when the manager cannot be read, 2 for
wrong arguments or an unusable kubeconfig.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from cli.ops.manager_target import add_cluster_options, manager_target
from cli.ops.ops_errors import OpsError
from cli.ops.output_format import (
    OutputFormat,
    add_output_option,
    age_text,
    print_document,
    table_console,
)
from cli.ops.queue_positions import PositionSource
from cli.ops.workload_listing import WorkloadFilter, WorkloadListing, WorkloadRow, list_workloads
from cli.ops.workload_phase import WorkloadPhase

SOURCE_NOTE = {
    PositionSource.VISIBILITY: "positions: from the hub's visibility API",
    PositionSource.COMPUTED: "positions: computed from the Workloads in the engine's order; "
    "the hub's visibility API did not answer",
}


def register(commands: Any) -> None:
    listing = commands.add_parser("list", help="list workloads with queue positions")
    kinds = listing.add_subparsers(dest="kind", metavar="KIND", required=True)
    workloads = kinds.add_parser(
        "workloads",
        aliases=["workload", "wl"],
        help="Workloads: status, queue position (0 = next) and the worker they run on",
    )
    add_cluster_options(workloads)
    workloads.add_argument("--clusterqueue", "--cq", help="only workloads of this ClusterQueue")
    workloads.add_argument("--localqueue", "--lq", help="only workloads of this LocalQueue")
    workloads.add_argument(
        "--status",
        choices=[phase.value for phase in WorkloadPhase],
        help="only workloads in this state",
    )
    workloads.add_argument(
        "--cluster", metavar="WORKER", help="only workloads dispatched to this worker"
    )
    add_output_option(workloads)
    workloads.set_defaults(handler=run_list_workloads)


def run_list_workloads(args: argparse.Namespace) -> int:
    try:
        target = manager_target(args)
        selection = WorkloadFilter(
            namespace=target.namespace,
            cluster_queue=args.clusterqueue,
            local_queue=args.localqueue,
            phase=WorkloadPhase(args.status) if args.status else None,
            worker=args.cluster,
        )
        with target.rest() as manager:
            listing = list_workloads(manager, selection, datetime.now(UTC))
    except OpsError as error:
        print(f"fleetq list workloads: {error}", file=sys.stderr)
        return error.status
    if args.output is not OutputFormat.TABLE:
        print_document(listing, args.output)
    elif not listing.items:
        where = f" in namespace {target.namespace}" if target.namespace else ""
        print(f"No workloads found{where}.", file=sys.stderr)
    else:
        print_listing(listing, all_namespaces=target.namespace is None)
    return 0


def print_listing(listing: WorkloadListing, *, all_namespaces: bool) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    columns = ["NAMESPACE"] if all_namespaces else []
    columns += ["NAME", "LOCALQUEUE", "CLUSTERQUEUE", "STATUS", "POSITION", "PRIORITY"]
    columns += ["WORKER", "AGE"]
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in listing.items:
        cells = [row.namespace] if all_namespaces else []
        cells += [
            row.name,
            row.local_queue or "-",
            row.cluster_queue or "-",
            row.status.value,
            position_text(row),
            str(row.priority),
            row.worker or "-",
            age_text(row.age_seconds),
        ]
        table.add_row(*cells)
    console = table_console()
    console.print(table)
    if listing.position_source is not None:
        console.print(SOURCE_NOTE[listing.position_source], style="dim")


def position_text(row: WorkloadRow) -> str:
    """`3 (lq 1)`: 4th in its ClusterQueue, 2nd in its LocalQueue; `-` when not queued."""
    if row.position_in_cluster_queue is None:
        return "-"
    return f"{row.position_in_cluster_queue} (lq {row.position_in_local_queue})"
