"""`fleetq`: the command line. Each sub-command lives in its own module; this one routes.

Optional command groups come from installed packages through the `fleetq.commands` entry
point group: each entry names a `register(commands)` function, as the built-in modules have.
That is how `fleetq dev ...` reaches the dev fleet without product code importing `devfleet`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from cli import agent_command, dashboard_command, hub_command, join_command, simulate_command
from cli.ops import commands as ops_commands

COMMAND_GROUPS_ENTRY_POINT = "fleetq.commands"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fleetq",
        description="Multi-cluster job queueing for Kubernetes (Kueue API, MultiKueue-first).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _register_installed_groups(commands)
    simulate_command.register(commands)
    hub_command.register(commands)
    dashboard_command.register(commands)
    join_command.register(commands)
    agent_command.register(commands)
    ops_commands.register(commands)
    version = commands.add_parser("version", help="print fleetq's version")
    version.set_defaults(handler=_print_version)
    return parser


def _register_installed_groups(commands: Any) -> None:
    """Add every command group an installed package offers under `fleetq.commands`.

    A group that cannot be loaded is left out with a warning, so a broken optional group
    never takes `fleetq hub` or `fleetq agent` down with it.
    """
    for entry in sorted(entry_points(group=COMMAND_GROUPS_ENTRY_POINT), key=lambda e: e.name):
        try:
            register = entry.load()
        except Exception as exc:
            print(
                f"fleetq: command group {entry.name!r} ({entry.value}) is unavailable: {exc}",
                file=sys.stderr,
            )
            continue
        register(commands)


def _print_version(_: argparse.Namespace) -> int:
    from importlib.metadata import version

    print(f"fleetq {version('fleetq')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
