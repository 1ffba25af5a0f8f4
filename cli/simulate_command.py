"""`fleetq simulate`: run the real engine on a virtual clock against a workload generator."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    simulate = commands.add_parser(
        "simulate", help="simulate a workload trace through the engine (virtual clock)"
    )
    simulate.add_argument(
        "--config", type=Path, required=True, help="generator YAML (upstream perf generator format)"
    )
    simulate.set_defaults(handler=_simulate)


def _simulate(args: argparse.Namespace) -> int:
    from core.engine.simulator import format_summary, run_simulation

    summary = run_simulation(args.config)
    print(format_summary(summary))
    return 0
