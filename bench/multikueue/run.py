"""MultiKueue dispatch benchmark: the fleetq hub against upstream Kueue's MultiKueue.

Not a test: it prints a comparison and writes JSON to ``bench/results/``. Each manager
kind runs in turn on a fresh lite fleet of its own (manager + N workers, etcd +
kube-apiserver each, write-audited), driven by the same Job submitter (see
bench/README.md, "MultiKueue dispatch").

    python -m bench.multikueue.run                          # 50 jobs/s x 500, 2 workers
    python -m bench.multikueue.run --jobs 1000 --rate 100 --workers 3
    python -m bench.multikueue.run --only fleetq --burst-jobs 500
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import structlog

from bench.multikueue.dispatch_driver import Phase
from bench.multikueue.dispatch_leg import LegSettings, ManagerKind, run_leg

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
DEFAULT_LEGS = (ManagerKind.UPSTREAM, ManagerKind.FLEETQ)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Submit Jobs to a MultiKueue manager at a fixed rate and time their "
        "dispatch to the workers: fleetq's hub and upstream Kueue, one fresh fleet each.",
    )
    parser.add_argument("--jobs", type=int, default=500, help="jobs of the steady phase (500)")
    parser.add_argument("--rate", type=float, default=50.0, help="steady submit rate, jobs/s (50)")
    parser.add_argument(
        "--burst-jobs",
        type=int,
        default=0,
        help="jobs sent at once after the steady phase (default 0: none); its figures include "
        "whatever the steady phase left in flight",
    )
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2, 3), help="workers (2)")
    parser.add_argument("--only", choices=[k.value for k in ManagerKind], help="one manager only")
    parser.add_argument(
        "--qps",
        type=float,
        default=1000.0,
        help="client QPS of every manager and worker process (1000, as upstream's MultiKueue "
        "performance runs; Kueue's default of 20 caps dispatch at a few per second)",
    )
    parser.add_argument("--burst", type=int, default=1000, help="client burst (1000)")
    parser.add_argument(
        "--worker-budget-leg",
        action="store_true",
        help="add the upstream-budget leg: upstream's manager built with a patch that gives "
        "its worker clients --qps/--burst too (`fleetq dev tools kueue-worker-budget`)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for dispatches after a phase's last create (120)",
    )
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds of late writes counted after a phase"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=("debug", "info", "warning", "error"),
        help="log level of fleetq's hub and agents (warning); their logs are kept only "
        "with --workdir",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep the processes' logs and configurations here (default: a temporary folder)",
    )
    return parser.parse_args(argv)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 2)


def comparison(legs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase and upstream leg: fleetq's figure over upstream's (throughput: higher is
    better; latency, writes and CPU: lower is better)."""
    if "fleetq" not in legs:
        return []
    rows = []
    for against in (ManagerKind.UPSTREAM, ManagerKind.UPSTREAM_BUDGET):
        if against.value in legs:
            rows += _ratios_against(legs["fleetq"], legs[against.value], against.value)
    return rows


def _ratios_against(
    fleetq: dict[str, Any], other: dict[str, Any], against: str
) -> list[dict[str, Any]]:
    rows = []
    upstream = {p["phase"]: p for p in other["phases"]}
    for mine in fleetq["phases"]:
        theirs = upstream.get(mine["phase"])
        if theirs is None:
            continue
        rows.append(
            {
                "phase": mine["phase"],
                "against": against,
                "throughput_x": _ratio(mine["throughput_per_s"], theirs["throughput_per_s"]),
                "p50_ratio": _ratio(mine["latency_p50_s"], theirs["latency_p50_s"]),
                "p99_ratio": _ratio(mine["latency_p99_s"], theirs["latency_p99_s"]),
                "remote_writes_ratio": _ratio(
                    mine["remote_writes_per_workload"], theirs["remote_writes_per_workload"]
                ),
                "manager_cpu_ratio": _ratio(mine["manager_cpu_s"], theirs["manager_cpu_s"]),
            }
        )
    return rows


def _print_table(legs: dict[str, dict[str, Any]], ratios: list[dict[str, Any]]) -> None:
    columns = (
        ("throughput_per_s", "disp/s"),
        ("latency_p50_s", "p50 s"),
        ("latency_p99_s", "p99 s"),
        ("remote_writes_per_workload", "writes/wl"),
        ("manager_cpu_s", "mgr CPU s"),
        ("worker_side_cpu_s", "wrk CPU s"),
        ("dispatched", "done"),
    )
    print(f"{'manager':15} {'phase':8} " + " ".join(f"{title:>10}" for _, title in columns))
    for name, leg in legs.items():
        for phase in leg["phases"]:
            cells = " ".join(f"{phase[key]!s:>10}" for key, _ in columns)
            print(f"{name:15} {phase['phase']:8} {cells}")
            if "machine_busy_cores" in phase:
                planes = ", ".join(f"{r} {c}" for r, c in phase["control_plane_cores"].items())
                print(
                    f"{'':15} {phase['phase']:8} machine busy {phase['machine_busy_cores']} of "
                    f"{phase['machine_cores']} cores; control planes (etcd+apiserver): {planes}"
                )
            if phase.get("dispatched_per_worker"):
                spread = ", ".join(
                    f"worker-{index + 1} {count}"
                    for index, count in enumerate(phase["dispatched_per_worker"])
                )
                print(f"{'':15} {phase['phase']:8} jobs per worker: {spread}")
        print(f"{name:15} peak RSS of the manager: {leg['manager_peak_rss_mib']} MiB")
    for row in ratios:
        print(
            f"fleetq / {row['against']}, {row['phase']}: throughput x{row['throughput_x']}, "
            f"p99 x{row['p99_ratio']}, remote writes/workload x{row['remote_writes_ratio']}, "
            f"manager CPU x{row['manager_cpu_ratio']}"
        )


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    # The driver's informers log every list; only problems belong in the benchmark's output.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    phases = [Phase("steady", args.rate, args.jobs)]
    if args.burst_jobs:
        phases.append(Phase("burst", 0.0, args.burst_jobs))
    kinds = [ManagerKind(args.only)] if args.only else list(DEFAULT_LEGS)
    if args.worker_budget_leg and not args.only:
        kinds.insert(1, ManagerKind.UPSTREAM_BUDGET)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    load_before = os.getloadavg()
    legs: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mkbench-") as temporary:
            scratch = args.workdir or Path(temporary)
            for kind in kinds:
                print(f"== {kind}: {args.workers} workers, phases {[p.name for p in phases]}")
                settings = LegSettings(
                    workers=args.workers,
                    phases=tuple(phases),
                    qps=args.qps,
                    burst=args.burst,
                    timeout=args.timeout,
                    settle=args.settle,
                    workdir=scratch / kind.value,
                    log_level=args.log_level,
                )
                legs[kind.value] = run_leg(kind, settings)
    finally:
        signal.signal(signal.SIGTERM, previous)
    ratios = comparison(legs)
    _print_table(legs, ratios)
    load_after = os.getloadavg()
    print(f"load average before {load_before}, after {load_after} on {os.cpu_count()} CPUs")
    report = {
        "benchmark": "multikueue-dispatch",
        "started": stamp,
        "host": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_before": load_before,
            "load_average_after": load_after,
        },
        "settings": {
            "workers": args.workers,
            "phases": [{"name": p.name, "rate": p.rate, "jobs": p.jobs} for p in phases],
            "qps": args.qps,
            "burst": args.burst,
        },
        "legs": legs,
        "ratios": ratios,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"multikueue-{stamp}.json"
    text = json.dumps(report, indent=2)
    path.write_text(text)
    (args.out / "multikueue-latest.json").write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
