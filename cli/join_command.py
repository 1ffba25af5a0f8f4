"""`fleetq join -f clusters.yaml`: register worker clusters with the manager (MultiKueue).

Exit status: 0 when every step succeeded, 1 when a cluster step failed (the output says
which and why), 2 when the fleet file or the arguments are wrong (nothing was touched).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    join = commands.add_parser(
        "join",
        help="join worker clusters to the manager from a fleet file (clusters.yaml)",
        description="Set up each worker (identity, least-privilege RBAC, mirrored namespaces "
        "and LocalQueues), mint a bounded-lifetime kubeconfig for it, and register it on the "
        "manager (Secret, MultiKueueCluster, MultiKueueConfig, AdmissionCheck). Idempotent: "
        "a second run changes nothing. See docs/join.md.",
    )
    join.add_argument("-f", "--file", type=Path, required=True, help="fleet file (clusters.yaml)")
    join.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (server-side dry run); change nothing, mint no token",
    )
    join.add_argument(
        "--rotate",
        action="store_true",
        help="re-mint tokens that expire within the rotation window and update their Secrets",
    )
    join.add_argument(
        "--rotate-before",
        metavar="DURATION",
        help="rotation window, e.g. 7d or 48h (default: the file's identity.rotateBefore)",
    )
    join.add_argument(
        "--context-override",
        metavar="CLUSTER=CONTEXT",
        action="append",
        default=[],
        help="use another kubeconfig context for 'manager' or a worker (repeatable)",
    )
    join.add_argument(
        "--parallel", type=int, default=4, help="workers set up at the same time (default 4)"
    )
    join.set_defaults(handler=_join)


def parse_overrides(values: list[str]) -> dict[str, str]:
    """`CLUSTER=CONTEXT` pairs; ValueError names the malformed one."""
    overrides: dict[str, str] = {}
    for value in values:
        cluster, separator, context = value.partition("=")
        if not separator or not cluster or not context:
            raise ValueError(f"--context-override {value!r}: write CLUSTER=CONTEXT")
        overrides[cluster] = context
    return overrides


def _join(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cli.join.duration_text import DurationError, parse_duration
    from cli.join.fleet_file import FleetFileError, load_fleet_file
    from cli.join.join_console import JoinConsole
    from cli.join.join_run import JoinOptions, run_join

    try:
        fleet = load_fleet_file(args.file)
        overrides = parse_overrides(args.context_override)
        rotate_before = parse_duration(args.rotate_before) if args.rotate_before else None
    except (FleetFileError, DurationError, ValueError) as error:
        print(f"fleetq join: {error}", file=sys.stderr)
        return 2
    if args.parallel < 1:
        print("fleetq join: --parallel must be at least 1", file=sys.stderr)
        return 2
    now = datetime.now(UTC)
    console = Console(highlight=False)
    clusters = ["manager", *(worker.name for worker in fleet.workers)]
    view = JoinConsole(console, dry_run=args.dry_run, now=now, clusters=clusters)
    mode = " (dry run: nothing will change)" if args.dry_run else ""
    console.print(f"[bold]fleetq join[/bold] {args.file}{mode}", soft_wrap=True)
    options = JoinOptions(
        dry_run=args.dry_run,
        rotate=args.rotate,
        rotate_before_seconds=rotate_before,
        context_overrides=overrides,
        parallel=args.parallel,
    )
    report = run_join(fleet, options, progress=view.event)
    view.summary(report)
    return 0 if report.ok else 1
