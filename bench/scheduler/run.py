"""Side-by-side benchmark: the fleetq hub against upstream Kueue on the same machine.

Not a test: it prints a table and writes JSON to ``bench/results/``. Each manager runs in
turn on its own fresh lite cluster (etcd + kube-apiserver), driven by upstream Kueue's
scheduler-perf runner with the same generator file, and is measured from outside the same
way (see bench/README.md, "Hub vs upstream Kueue").

    python bench/scheduler/run.py                                  # small config, both managers
    python bench/scheduler/run.py --config examples/simulate/baseline.yaml --timeout 900
    python bench/scheduler/run.py --config upstream:tas --timeout 1800   # upstream's TAS config
    python bench/scheduler/run.py --config upstream:tas --cohorts 1      # a fifth of it
    python bench/scheduler/run.py --only fleetq                    # one leg
    python bench/scheduler/run.py --show bench/results/hub-latest.json   # re-print a table
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
DEFAULT_CONFIG = ROOT / "bench" / "scheduler" / "configs" / "small.yaml"
MANAGERS = ("upstream", "fleetq")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run upstream's scheduler-perf runner against upstream Kueue "
        "(minimalkueue) and the fleetq hub, one fresh cluster each, and compare.",
    )
    parser.add_argument(
        "--config",
        default=str(DEFAULT_CONFIG),
        help="generator file in upstream's format (default: bench/scheduler/configs/small.yaml)"
        ", or upstream:NAME for upstream's own test/performance/scheduler/configs/NAME",
    )
    parser.add_argument(
        "--rangespec",
        type=Path,
        help="upstream's bounds to show beside the figures (default: rangespec.yaml beside "
        "the config, if any)",
    )
    parser.add_argument(
        "--cohorts",
        type=int,
        help="make every cohort set of the config this many cohorts (a shorter run of the "
        "same shape; upstream's bars are for the whole config)",
    )
    parser.add_argument("--only", choices=MANAGERS, help="run one manager only")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds each runner may take before it is stopped (default 600)",
    )
    parser.add_argument(
        "--max-requests-inflight", type=int, help="apiserver limit (default: upstream's, 5000)"
    )
    parser.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        help="apiserver limit (default: upstream's, 2500)",
    )
    parser.add_argument(
        "--keep-audit-log", action="store_true", help="copy the apiserver audit log to results"
    )
    parser.add_argument(
        "--fleetq-log-level",
        default="warning",
        help="the hub's --log-level (debug logs every status write; costs CPU)",
    )
    parser.add_argument("--show", type=Path, help="print the table of a saved result and exit")
    return parser.parse_args(argv)


UPSTREAM_PREFIX = "upstream:"


def _resolve_config(raw: str) -> Path:
    """A path, or `upstream:NAME`: the generator of upstream's own config NAME in the
    module of the Kueue version under test (its rangespec.yaml sits beside it)."""
    if not raw.startswith(UPSTREAM_PREFIX):
        return Path(raw).resolve()
    from devfleet.toolchain import KUEUE_VERSION
    from devfleet.upstream_kueue import upstream_module

    name = raw.removeprefix(UPSTREAM_PREFIX)
    configs = upstream_module(KUEUE_VERSION) / "test" / "performance" / "scheduler" / "configs"
    return configs / name / "generator.yaml"


def _interrupt_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so every manager and cluster is still cleaned up."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def _write(report: dict[str, Any], stamp: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"hub-{stamp}.json"
    text = json.dumps(report, indent=2, sort_keys=False) + "\n"
    path.write_text(text)
    (RESULTS / "hub-latest.json").write_text(text)
    return path


def _ratios(legs: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    from bench.scheduler.comparison_table import headline_figures, ratio

    if "upstream" not in legs or "fleetq" not in legs:
        return {}
    return {figure.label: ratio(figure, "fleetq", "upstream") for figure in headline_figures(legs)}


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.scheduler.benchmark_leg import LegOptions, run_leg
    from bench.scheduler.comparison_table import format_table
    from bench.scheduler.managers import ManagerKind, PrerequisiteMissing, check_prerequisites
    from bench.scheduler.perf_runner import with_cohort_count
    from bench.scheduler.rangespec import Bars, RangespecError, rangespec_beside, read_rangespec
    from bench.scheduler.tuned_cluster import (
        UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT,
        UPSTREAM_MAX_REQUESTS_INFLIGHT,
    )
    from devfleet.toolchain import KUEUE_VERSION

    if args.show is not None:
        saved = json.loads(args.show.read_text())
        print(format_table(saved["legs"], bars=Bars.from_json(saved.get("rangespec"))))
        return 0
    config = _resolve_config(args.config)
    if not config.is_file():
        print(f"bench/scheduler: no generator config at {config}", file=sys.stderr)
        return 2
    rangespec = args.rangespec or rangespec_beside(config)
    try:
        bars = None if rangespec is None else read_rangespec(rangespec)
    except RangespecError as exc:
        print(f"bench/scheduler: {exc}", file=sys.stderr)
        return 2
    kinds = [ManagerKind(args.only)] if args.only else [ManagerKind(m) for m in MANAGERS]
    try:
        for kind in kinds:
            check_prerequisites(kind)
    except PrerequisiteMissing as exc:
        print(f"bench/scheduler: {exc}", file=sys.stderr)
        return 2
    if args.max_requests_inflight is None:
        args.max_requests_inflight = UPSTREAM_MAX_REQUESTS_INFLIGHT
    if args.max_mutating_requests_inflight is None:
        args.max_mutating_requests_inflight = UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT
    _interrupt_on_sigterm()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    output_dir = RESULTS / f"hub-{stamp}"
    source_config = config
    if args.cohorts is not None:
        config = with_cohort_count(source_config, args.cohorts, output_dir)
    options = LegOptions(
        generator_config=config,
        output_dir=output_dir,
        timeout_s=args.timeout,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        keep_audit_log=args.keep_audit_log,
        fleetq_log_level=args.fleetq_log_level,
    )
    report: dict[str, Any] = {
        "benchmark": "hub-vs-upstream",
        "started": stamp,
        "generator_config": str(source_config),
        "cohorts_per_set": args.cohorts,
        "rangespec_file": None if rangespec is None else str(rangespec),
        "rangespec": None if bars is None else bars.to_json(),
        "upstream_kueue": KUEUE_VERSION,
        "timeout_s": args.timeout,
        "apiserver": {
            "max_requests_inflight": args.max_requests_inflight,
            "max_mutating_requests_inflight": args.max_mutating_requests_inflight,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": list(os.getloadavg()),
        },
        "legs": {},
        "ratios_fleetq_over_upstream": {},
    }
    path: Path | None = None
    try:
        for kind in kinds:
            print(f"== {kind}: {config.name} ==", flush=True)
            result = run_leg(kind, options, progress=lambda line: print(line, flush=True))
            report["legs"][kind.value] = result.to_json()
            path = _write(report, stamp)
    except KeyboardInterrupt:
        print("bench/scheduler: interrupted; managers and clusters were stopped", file=sys.stderr)
        if report["legs"]:
            _write(report, stamp)
        return 130
    report["ratios_fleetq_over_upstream"] = _ratios(report["legs"])
    path = _write(report, stamp)
    print()
    print(format_table(report["legs"], bars=bars))
    print(f"\nJSON: {path}\nrunner output, logs: {options.output_dir}")
    failed = [name for name, leg in report["legs"].items() if leg.get("error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
