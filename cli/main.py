"""`fleetq`: the command line. Each sub-command lives in its own module; this one routes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli import agent_command, dev_commands, hub_command, join_command, simulate_command
from cli.ops import commands as ops_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fleetq",
        description="Multi-cluster job queueing for Kubernetes (Kueue API, MultiKueue-first).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    dev_commands.register(commands)
    simulate_command.register(commands)
    hub_command.register(commands)
    join_command.register(commands)
    agent_command.register(commands)
    ops_commands.register(commands)
    version = commands.add_parser("version", help="print fleetq's version")
    version.set_defaults(handler=_print_version)
    return parser


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
