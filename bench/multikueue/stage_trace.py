"""Where a dispatch spends its time: per-stage latencies read from the hub's and agents' logs.

Run a leg with logs kept (`--log-level info --workdir DIR`; `debug` adds the hub's own
status writes), then `python -m bench.multikueue.stage_trace DIR/fleetq`. Every workload's
logged milestones (Workload created, quota reserved, nominated, copy created, admitted on
the worker, Job created there, check Ready, ...) are put in time order, and each step from
one milestone to the next is summarised over all workloads, slowest total first: the
step that holds the time stands at the top.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.api.kube_time import parse_time
from core.engine.nearest_rank import nearest_rank

LOG_FILES = ("hub.log", "agent-*.log")
"""Logs a fleetq leg keeps in its workdir."""


@dataclass(frozen=True, slots=True)
class Milestone:
    workload: str
    stage: str
    at: float


@dataclass(frozen=True, slots=True)
class StepFigures:
    step: str
    count: int
    p50: float
    p90: float
    longest: float
    total: float


def _stage(source: str, entry: dict[str, object]) -> str:
    event = str(entry.get("event"))
    if event == "multikueue.status_written":
        return f"{source} {event}:{entry.get('change')}"
    if event == "workload.status_written":
        conditions = entry.get("conditions") or []
        shown = (
            ",".join(str(c).split("/")[0] for c in conditions)
            if isinstance(conditions, list)
            else ""
        )
        return f"{source} {event}:{shown or '-'}"
    return f"{source} {event}"


def _workload_key(entry: dict[str, object]) -> str | None:
    workload = entry.get("workload")
    if not isinstance(workload, str) or not workload:
        return None
    if "/" in workload:
        return workload
    job = entry.get("job")
    namespace = job.partition("/")[0] if isinstance(job, str) and "/" in job else ""
    return f"{namespace}/{workload}" if namespace else workload


def milestones(source: str, lines: Iterable[str], phase: str = "") -> Iterator[Milestone]:
    """The first time each stage was logged per workload (JSON log lines; others skipped)."""
    seen: set[tuple[str, str]] = set()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or "timestamp" not in entry:
            continue
        workload = _workload_key(entry)
        if workload is None or (phase and phase not in workload):
            continue
        stage = _stage(source, entry)
        if (workload, stage) in seen:
            continue
        seen.add((workload, stage))
        at = parse_time(str(entry["timestamp"]))
        yield Milestone(workload, stage, at.timestamp())


def _rank(values: list[float], fraction: float) -> float:
    """nearest_rank of a step's durations, of which there is always at least one."""
    return nearest_rank(values, fraction) or 0.0


def step_figures(points: Iterable[Milestone]) -> list[StepFigures]:
    """Per step between consecutive milestones of a workload; slowest total first."""
    by_workload: dict[str, list[Milestone]] = defaultdict(list)
    for point in points:
        by_workload[point.workload].append(point)
    durations: dict[str, list[float]] = defaultdict(list)
    for series in by_workload.values():
        series.sort(key=lambda p: (p.at, p.stage))
        for before, after in itertools.pairwise(series):
            durations[f"{before.stage} -> {after.stage}"].append(after.at - before.at)
    out = []
    for step, values in durations.items():
        values.sort()
        out.append(
            StepFigures(
                step=step,
                count=len(values),
                p50=_rank(values, 0.5),
                p90=_rank(values, 0.9),
                longest=values[-1],
                total=sum(values),
            )
        )
    out.sort(key=lambda f: (-f.total, f.step))
    return out


def read_leg(workdir: Path, phase: str) -> list[Milestone]:
    points: list[Milestone] = []
    for pattern in LOG_FILES:
        for path in sorted(workdir.glob(pattern)):
            with path.open() as lines:
                points.extend(milestones(path.stem, lines, phase))
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Per-stage dispatch latencies from leg logs.")
    parser.add_argument("workdir", type=Path, help="the leg's folder (hub.log, agent-*.log)")
    parser.add_argument("--phase", default="steady", help="Job name prefix to keep (steady)")
    parser.add_argument("--top", type=int, default=15, help="steps shown (15)")
    args = parser.parse_args(argv)
    figures = step_figures(read_leg(args.workdir, args.phase))
    if not figures:
        print(f"no milestones for {args.phase!r} in {args.workdir}", file=sys.stderr)
        return 1
    print(f"{'n':>5} {'p50 s':>7} {'p90 s':>7} {'max s':>7}  step")
    for f in figures[: args.top]:
        print(f"{f.count:5} {f.p50:7.3f} {f.p90:7.3f} {f.longest:7.3f}  {f.step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
