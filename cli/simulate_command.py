"""`fleetq simulate`: run the real engine on a virtual clock against a workload generator.

The generator file uses upstream Kueue's scheduler-perf format; the figures printed are
the ones upstream's perf runner reports (time to admission per class, usage, makespan).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def register(commands: Any) -> None:
    simulate = commands.add_parser(
        "simulate",
        help="simulate a workload trace through the engine (virtual clock)",
        description="Run the fleetq engine on a virtual clock against a generator file "
        "(upstream Kueue's scheduler-perf format) and print upstream's summary figures.",
    )
    simulate.add_argument("--config", type=Path, required=True, help="generator YAML file")
    simulate.add_argument(
        "--model",
        default="upstream-like",
        help="manager cost model: 'upstream-like' (default) or 'instant' (no costs)",
    )
    simulate.add_argument("--qps", type=float, help="manager API write rate limit (0 = none)")
    simulate.add_argument("--burst", type=int, help="manager API write burst")
    simulate.add_argument("--cycle-ms", type=float, help="fixed virtual cost of one cycle, ms")
    simulate.add_argument("--until", type=float, help="stop at this virtual second")
    simulate.add_argument("--json", action="store_true", help="print the summary as JSON")
    simulate.set_defaults(handler=_simulate)


class GeneratorFileError(ValueError):
    """The generator file cannot be read or parsed."""


def read_generator_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise GeneratorFileError(f"cannot read generator config {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise GeneratorFileError(f"generator config {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise GeneratorFileError(f"generator config {path} must be a mapping")
    return data


def _simulate(args: argparse.Namespace) -> int:
    from core.engine.simulator import GeneratorConfigError, format_summary, run_simulation
    from core.engine.simulator.manager_model import MODELS

    if args.model not in MODELS:
        print(f"error: --model must be one of {', '.join(sorted(MODELS))}", file=sys.stderr)
        return 2
    model = MODELS[args.model]
    if args.qps is not None:
        model = dataclasses.replace(model, api_qps=args.qps or None)
    if args.burst is not None:
        model = dataclasses.replace(model, api_burst=args.burst)
    if args.cycle_ms is not None:
        model = dataclasses.replace(model, cycle_base_s=args.cycle_ms / 1000.0)
    try:
        config = read_generator_file(args.config)
        summary = run_simulation(config, model=model, until_s=args.until)
    except (GeneratorFileError, GeneratorConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(dataclasses.asdict(summary), indent=2))
    else:
        print(format_summary(summary))
    return 0
