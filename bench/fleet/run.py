"""Dispatch at fleet scale, on a virtual clock: `python -m bench.fleet`.

Runs `core.engine.simulator.fleet` (the hub's real placement, claims and nomination logic;
the workers as models) for each worker count and placement policy and prints, per run:
jobs, decisions, hub CPU per decision (this process's CPU time over the decisions),
jobs per worker (fewest / most), time from submission to admission on a worker (p50 /
p99, virtual seconds) and withdrawals (nominations that timed out or gave way). Figures
go to bench/results/fleet-<time>.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.engine.dispatch.placement_policy import PlacementPolicy
from core.engine.simulator.fleet import FleetScenario, simulate_fleet

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
DEFAULT_WORKERS = (1, 2, 3, 5, 20, 50, 100, 200, 500)


def jobs_for(workers: int) -> int:
    """Enough jobs to fill every worker a few times over, within a few minutes of CPU."""
    return min(4000, max(300, 20 * workers))


def run_one(workers: int, policy: PlacementPolicy) -> dict[str, Any]:
    scenario = FleetScenario(workers=workers, jobs=jobs_for(workers), policy=policy)
    started = time.process_time()
    result = simulate_fleet(scenario)
    cpu = time.process_time() - started
    row = asdict(result)
    row.pop("waits")
    row["cpu_s"] = round(cpu, 3)
    row["cpu_us_per_decision"] = round(1e6 * cpu / max(1, result.decisions), 1)
    row["fewest_jobs_on_a_worker"], row["most_jobs_on_a_worker"] = result.spread
    if workers > 20:
        row.pop("per_worker")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers", default=",".join(map(str, DEFAULT_WORKERS)), help="worker counts"
    )
    parser.add_argument(
        "--policies", default=",".join(p.value for p in PlacementPolicy), help="policies"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    print(
        f"{'workers':>7} {'policy':11} {'jobs':>5} {'decisions':>9} {'us/dec':>7} "
        f"{'jobs/worker':>12} {'wait p50':>8} {'wait p99':>8} {'withdrawn':>9}"
    )
    for workers in (int(w) for w in args.workers.split(",")):
        for policy in (PlacementPolicy(p) for p in args.policies.split(",")):
            row = run_one(workers, policy)
            rows.append(row)
            spread = f"{row['fewest_jobs_on_a_worker']}-{row['most_jobs_on_a_worker']}"
            print(
                f"{workers:>7} {policy.value:11} {row['jobs']:>5} {row['decisions']:>9} "
                f"{row['cpu_us_per_decision']:>7} {spread:>12} {row['wait_p50_s']:>8.2f} "
                f"{row['wait_p99_s']:>8.2f} {row['withdrawals']:>9}",
                flush=True,
            )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"fleet-{stamp}.json"
    out.write_text(json.dumps({"load_average": os.getloadavg(), "runs": rows}, indent=2))
    print(f"figures: {out}")
    return 0
