"""`fleetq dev ...`: build the tools and run a local fleet of real control planes.

The group lives with the dev fleet, not in `cli`, because product code never imports
`devfleet`: `cli.main` finds it through the `fleetq.commands` entry point (pyproject.toml).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_readiness import ClusterNotReady
from devfleet.fleet import Fleet, FleetError
from devfleet.fleet_spec import FleetSpecError, load_fleet_spec
from devfleet.kwokctl import KwokctlError
from devfleet.toolchain import ToolBuildError, build_tools

console = Console(stderr=True)


def register(commands: Any) -> None:
    dev = commands.add_parser("dev", help="local development fleet (offline, kwok nodes)")
    sub = dev.add_subparsers(dest="dev_command", metavar="ACTION", required=True)

    tools = sub.add_parser("tools", help="build the Kubernetes tools from Go modules (cached)")
    tools.add_argument("names", nargs="*", help="only these tools (default: all)")
    tools.set_defaults(handler=_tools)

    up = sub.add_parser("up", help="start a manager and N worker clusters")
    up.add_argument("--workers", type=int, default=2, help="number of worker clusters (2)")
    up.add_argument(
        "--lite",
        action="store_true",
        help="etcd + apiserver only (no scheduler, controllers or nodes)",
    )
    up.add_argument("--fleet", type=Path, help="fleet description YAML (default: built in)")
    up.add_argument("--name", default="dev", help="fleet name (default: dev)")
    up.set_defaults(handler=_up)

    status = sub.add_parser("status", help="show the fleet's clusters and nodes")
    status.add_argument("--name", default="dev", help="fleet name (default: dev)")
    status.set_defaults(handler=_status)

    demo = sub.add_parser(
        "demo",
        help="the `make demo` run: fleet, charts, hub and agents, jobs spreading, teardown",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the fleet, the hub and the agents running (`make demo KEEP=1`)",
    )
    demo.add_argument(
        "--short", action="store_true", help="a smaller, quicker job mix (used by the tests)"
    )
    demo.add_argument(
        "--summary-file", type=Path, help="also write the summary as JSON to this file"
    )
    demo.add_argument("--name", default="demo", help="fleet name (default: demo)")
    demo.set_defaults(handler=_demo)

    conformance = sub.add_parser(
        "conformance",
        help="run one of upstream Kueue's e2e suites against fleetq (JUnit report, summary)",
    )
    conformance.add_argument(
        "--suite",
        default="baseline",
        help="baseline (singlecluster/baseline, the default), extended "
        "(singlecluster/extended: the job operators' kinds) or multikueue "
        "(multikueue/baseline: the hub and two workers running the fleetq agent)",
    )
    conformance.add_argument(
        "--label-filter",
        default=None,
        help="ginkgo label filter (default: every feature of the suite fleetq has a kind for, "
        "devfleet.conformance_suites)",
    )
    conformance.add_argument("--focus", help="ginkgo focus regexp (default: none)")
    conformance.add_argument(
        "--skip", action="append", default=[], help="ginkgo skip regexp (repeatable)"
    )
    conformance.add_argument(
        "--ci",
        action="store_true",
        help="the slice of the suite `make test` runs (devfleet.conformance_suites, Suite.ci)",
    )
    conformance.add_argument("--timeout", default="20m", help="ginkgo suite timeout (default: 20m)")
    conformance.add_argument(
        "--procs",
        type=int,
        default=4,
        help="parallel ginkgo processes (default: 4, as upstream's e2e targets; 1: one by one)",
    )
    conformance.add_argument(
        "--keep", action="store_true", help="leave the fleet and the hub running afterwards"
    )
    conformance.add_argument(
        "--dispatcher",
        help="the hub's multiKueue.dispatcherName (default: fleetq's, fleetq.dev/capacity-aware;"
        " upstream's default is kueue.x-k8s.io/multikueue-dispatcher-all-at-once)",
    )
    conformance.add_argument(
        "--name",
        default=None,
        help="fleet name (default: conformance; conformance-multikueue for --suite multikueue)",
    )
    conformance.set_defaults(handler=_conformance)

    real_node = sub.add_parser(
        "real-node",
        help="a manager with a real node (kubelet + containerd) running the hub chart's pods",
    )
    real_node.add_argument(
        "--keep", action="store_true", help="leave the fleet, the node and the hub running"
    )
    real_node.add_argument(
        "--down", action="store_true", help="remove a node and fleet kept with --keep"
    )
    real_node.add_argument("--name", default="real-node", help="fleet name (default: real-node)")
    real_node.set_defaults(handler=_real_node)

    down = sub.add_parser("down", help="stop every cluster and remove the fleet's state")
    down.add_argument("--name", default="dev", help="fleet name (default: dev)")
    down.set_defaults(handler=_down)


def _say(line: str) -> None:
    console.print(line, highlight=False)


def _tools(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        report = build_tools(args.names or None, progress=_say)
    except ToolBuildError as exc:
        console.print(f"[red]tool build failed[/red]\n{exc}", highlight=False)
        return 1
    built = ", ".join(f"{name} {secs:.0f}s" for name, secs in report.built.items()) or "nothing"
    _say(f"tools ready in {time.monotonic() - started:.0f}s (built: {built})")
    return 0


def _up(args: argparse.Namespace) -> int:
    try:
        spec = load_fleet_spec(args.fleet).with_worker_count(args.workers)
        fleet = Fleet(args.name).up(spec, lite=args.lite, progress=_say)
    except (FleetError, FleetSpecError, KwokctlError, ClusterNotReady) as exc:
        console.print(f"[red]fleetq dev up: {exc}[/red]", highlight=False)
        return 1
    _print_summary(fleet)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from devfleet.chart_install import ChartInstallError
    from devfleet.demo import DemoOptions, run_demo
    from devfleet.demo_join import DemoJoinError
    from devfleet.fleet_process import FleetProcessError
    from devfleet.multikueue_fleet import MultiKueueFleetError

    options = DemoOptions(
        keep=args.keep, short=args.short, summary_file=args.summary_file, fleet_name=args.name
    )
    try:
        return run_demo(options, say=_say)
    except (
        FleetError,
        FleetSpecError,
        KwokctlError,
        ClusterNotReady,
        ToolBuildError,
        ChartInstallError,
        DemoJoinError,
        MultiKueueFleetError,
        FleetProcessError,
        AssertionError,
    ) as exc:
        console.print(f"[red]fleetq dev demo: {exc}[/red]", highlight=False)
        return 1


def _conformance(args: argparse.Namespace) -> int:
    from devfleet.conformance import (
        ConformanceError,
        ConformanceOptions,
        run_conformance,
    )
    from devfleet.conformance_suites import suite_named
    from devfleet.fleet_process import FleetProcessError
    from devfleet.operators.spec import OperatorError

    try:
        suite = suite_named(args.suite)
    except KeyError as exc:
        console.print(f"[red]fleetq dev conformance: {exc.args[0]}[/red]", highlight=False)
        return 2
    options = ConformanceOptions(
        fleet_name=args.name,
        suite=suite,
        label_filter=args.label_filter or (suite.ci.label_filter if args.ci else None),
        focus=args.focus,
        skip=tuple(args.skip) + (tuple(suite.ci.skips) if args.ci else ()),
        suite_timeout=args.timeout,
        procs=args.procs,
        keep=args.keep,
        dispatcher=args.dispatcher,
    )
    try:
        summary = run_conformance(options, say=_say)
    except (
        ConformanceError,
        FleetError,
        FleetSpecError,
        KwokctlError,
        ClusterNotReady,
        ToolBuildError,
        FleetProcessError,
        OperatorError,
        AssertionError,
    ) as exc:
        console.print(f"[red]fleetq dev conformance: {exc}[/red]", highlight=False)
        return 1
    for node in summary.failed_suite_nodes:
        _say(f"suite node {node.status}: {node.name}: {node.message}")
    for spec in summary.failed:
        _say(f"{spec.status}: {spec.name}" + (f"\n    {spec.message}" if spec.message else ""))
    _say(f"{suite.name}: {summary.line()}")
    return 0 if not summary.failed and not summary.failed_suite_nodes else 1


def _real_node(args: argparse.Namespace) -> int:
    from devfleet.chart_install import ChartInstallError
    from devfleet.containerd_runtime import ContainerdError
    from devfleet.kubelet_process import KubeletError
    from devfleet.node_network import NodeNetworkError
    from devfleet.real_node import RealNodeError
    from devfleet.real_node_hub import RealNodeHubError
    from devfleet.real_node_run import RealNodeOptions, down, run_real_node

    if args.down:
        return down(args.name, say=_say)
    try:
        return run_real_node(RealNodeOptions(fleet_name=args.name, keep=args.keep), say=_say)
    except (
        RealNodeError,
        RealNodeHubError,
        ContainerdError,
        KubeletError,
        NodeNetworkError,
        ChartInstallError,
        FleetError,
        FleetSpecError,
        KwokctlError,
        ClusterNotReady,
    ) as exc:
        console.print(f"[red]fleetq dev real-node: {exc}[/red]", highlight=False)
        return 1


def _status(args: argparse.Namespace) -> int:
    fleet = Fleet(args.name)
    record = fleet.record()
    if record is None:
        _say(f"fleet {args.name!r} is not running (start it with `fleetq dev up`)")
        return 1
    alive = set(fleet.answering())
    _print_summary(fleet.access(), alive=alive)
    return 0 if alive == set(record.clusters) else 1


def _down(args: argparse.Namespace) -> int:
    fleet = Fleet(args.name)
    if fleet.record() is None and not fleet.dir.exists():
        _say(f"fleet {args.name!r} is not running; nothing to do")
        return 0
    started = time.monotonic()
    _say(f"fleet {args.name!r}: stopping")
    leftovers = fleet.down(progress=_say)
    if leftovers:
        return 1
    _say(f"fleet {args.name!r}: down in {time.monotonic() - started:.1f}s, nothing left running")
    return 0


def _print_summary(fleet: RunningFleet, alive: set[str] | None = None) -> None:
    table = Table(title=f"fleet {fleet.name} ({'lite' if fleet.lite else 'full'})")
    for column in ("cluster", "state", "server", "nodes", "GPUs"):
        table.add_column(column)
    for member in fleet.all:
        state = "up" if alive is None or member.name in alive else "DOWN"
        nodes, gpus = _node_figures(member) if state == "up" else ("-", "-")
        table.add_row(member.name, state, member.server, nodes, gpus)
    Console(width=max(100, Console().width)).print(table)
    for member in fleet.all:
        print(f"{member.name:<10} kubeconfig: {member.kubeconfig}", file=sys.stdout)
    print(f"export KUBECONFIG={fleet.manager.kubeconfig}   # the manager", file=sys.stdout)


def _node_figures(member: ClusterAccess) -> tuple[str, str]:
    from kubernetes import client

    try:
        with member.api_client() as api_client:
            nodes = client.CoreV1Api(api_client).list_node(_request_timeout=5).items
    except Exception as exc:
        return ("?", f"error: {str(exc).splitlines()[0][:40]}")
    gpus = sum(int((n.status.allocatable or {}).get("nvidia.com/gpu", "0")) for n in nodes)
    return (str(len(nodes)), str(gpus))
