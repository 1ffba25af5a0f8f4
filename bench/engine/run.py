"""Engine benchmark: cycle latency, whole simulated runs, memory per pending workload.

Not a test: it prints figures and writes them as JSON to ``bench/results/``. Each part runs
in its own child process so peak RSS and CPU time belong to that part alone.

    python bench/engine/run.py                 # every part
    python bench/engine/run.py --parts cycle,memory
    python bench/engine/run.py --profile baseline   # cProfile hot spots of one part

Parts (targets from the issue in brackets):
  cycle       one scheduling cycle with 30 heads on the baseline shape, 15,000 pending
              workloads: median / p90 [median <= 5 ms]
  baseline    simulate examples/simulate/baseline.yaml: CPU s, peak RSS [<= 15 s CPU]
  large       simulate examples/simulate/large-scale.yaml: CPU s, peak RSS [<= 60 s CPU]
  memory      tracemalloc growth per 10,000 pending workloads
  tas         topology-aware scheduling: 1,000 nodes (4 blocks x 10 racks x 25 hosts),
              30 ClusterQueues, 6,000 TAS workloads (required rack / preferred rack /
              unconstrained / block with host slices): cycle median / p90, admissions
              per CPU second
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "simulate"
RESULTS = ROOT / "bench" / "results"

TARGETS = {
    "cycle_median_ms": 5.0,
    "baseline_cpu_s": 15.0,
    "large_cpu_s": 60.0,
}
UPSTREAM_BASELINE = {
    "wall_s": 351.0,
    "usage": 0.559,
    "avg_time_to_admission_s": {"small": 215.5, "medium": 76.8, "large": 16.5},
}
UPSTREAM_LARGE = {
    "wall_s": 1179.0,
    "usage": 0.386,
    "avg_time_to_admission_s": {"small": 700.4, "medium": 256.4, "large": 105.6},
}

PARTS = ("cycle", "baseline", "large", "memory", "tas")


# ---------------------------------------------------------------------------- parts


def part_cycle(cycles: int = 400, pending: int = 15_000) -> dict[str, Any]:
    """Time ``Engine.schedule()`` while all 30 baseline queues have heads.

    All baseline workloads are queued up front; after each cycle the admitted ones finish at
    once, so quota frees and every queue keeps a head. Timers (requeue batching) are run
    between cycles, outside the timed section.
    """
    from cli.simulate_command import read_generator_file
    from core.engine.clock import ManualClock
    from core.engine.engine import Engine
    from core.engine.simulator.engine_objects import install_queues, workload
    from core.engine.simulator.generator import load_scenario

    scenario = load_scenario(read_generator_file(EXAMPLES / "baseline.yaml"))
    clock = ManualClock()
    engine = Engine(clock=clock)
    install_queues(engine, scenario)
    for arrival in scenario.arrivals[:pending]:
        engine.add_workload(workload(arrival))
    clock.set(scenario.arrivals[pending - 1].created_ms / 1000.0)

    samples: list[tuple[int, float]] = []
    for _ in range(cycles):
        clock.advance(0.001)
        due = engine.next_timer()
        if due is not None and due <= clock.now():
            engine.tick()
        start = time.perf_counter()
        result = engine.schedule()
        elapsed = time.perf_counter() - start
        samples.append((result.heads, elapsed))
        for admitted in result.admitted:
            engine.finish(admitted.key)
        if result.heads == 0:
            due = engine.next_timer()
            if due is None:
                break
            clock.set(max(due, clock.now()))
            engine.tick()

    full = [s for h, s in samples if h == len(scenario.queues)]
    chosen = full if len(full) >= 20 else [s for h, s in samples if h > 0]
    return {
        "cycles_timed": len(samples),
        "cycles_with_30_heads": len(full),
        "heads_used": "30" if chosen is full else "any > 0",
        "median_ms": _ms(statistics.median(chosen)) if chosen else None,
        "p90_ms": _ms(_quantile(chosen, 0.9)) if chosen else None,
        "max_ms": _ms(max(chosen)) if chosen else None,
        "pending_at_start": pending,
    }


def part_simulation(config: str) -> dict[str, Any]:
    """Simulate a whole generator file; CPU seconds and peak RSS of this process."""
    from cli.simulate_command import read_generator_file
    from core.engine.simulator import format_summary, run_simulation

    start_cpu = time.process_time()
    start_wall = time.perf_counter()
    summary = run_simulation(read_generator_file(EXAMPLES / config))
    cpu = time.process_time() - start_cpu
    wall = time.perf_counter() - start_wall
    return {
        "config": config,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "peak_rss_mib": round(_peak_rss_mib(), 1),
        "summary": asdict(summary),
        "summary_text": format_summary(summary),
    }


def part_memory(count: int = 10_000) -> dict[str, Any]:
    """Bytes the engine holds per pending workload (tracemalloc, workload objects included)."""
    from cli.simulate_command import read_generator_file
    from core.engine.clock import ManualClock
    from core.engine.engine import Engine
    from core.engine.simulator.engine_objects import install_queues, workload
    from core.engine.simulator.generator import load_scenario

    scenario = load_scenario(read_generator_file(EXAMPLES / "baseline.yaml"))
    arrivals = scenario.arrivals[:count]
    engine = Engine(clock=ManualClock())
    install_queues(engine, scenario)
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for arrival in arrivals:
        engine.add_workload(workload(arrival))
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = after - before
    return {
        "pending": len(arrivals),
        "mib_per_10k": round(grown / len(arrivals) * 10_000 / 2**20, 2),
        "bytes_per_workload": round(grown / len(arrivals)),
        "peak_mib": round((peak - before) / 2**20, 2),
    }


def part_tas(
    blocks: int = 4, racks: int = 10, hosts: int = 25, queues: int = 30, per_queue: int = 200
) -> dict[str, Any]:
    """Cycles with TAS workloads in every queue; admitted ones run for 20 cycles, so the
    topology stays fragmented and placements have to search."""
    from core.engine.clock import ManualClock
    from core.engine.engine import Engine
    from core.engine.model import (
        ClusterQueue,
        FlavorQuotas,
        LocalQueue,
        Node,
        PodSet,
        ResourceFlavor,
        ResourceGroup,
        ResourceQuota,
        SliceLayer,
        Topology,
        TopologyRequest,
        Workload,
    )

    block, rack, host = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
    clock = ManualClock()
    engine = Engine(clock=clock)
    engine.upsert_topology(Topology(name="gpu", levels=(block, rack, host)))
    engine.upsert_resource_flavor(
        ResourceFlavor(name="tas", node_labels={"pool": "gpu"}, topology_name="gpu")
    )
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h}"
                labels = {"pool": "gpu", block: f"b{b}", rack: f"b{b}-r{r}", host: name}
                engine.upsert_node(
                    Node(name=name, labels=labels, allocatable={"cpu": 96_000, "pods": 110})
                )
    nodes = blocks * racks * hosts
    quota = nodes * 96_000 // queues * 2
    for q in range(queues):
        engine.upsert_cluster_queue(
            ClusterQueue(
                name=f"cq{q}",
                resource_groups=(
                    ResourceGroup(
                        covered_resources=("cpu",),
                        flavors=(
                            FlavorQuotas(
                                name="tas", resources=(ResourceQuota(name="cpu", nominal=quota),)
                            ),
                        ),
                    ),
                ),
            )
        )
        engine.upsert_local_queue(LocalQueue(namespace="ns", name=f"lq{q}", cluster_queue=f"cq{q}"))
    shapes = (
        (TopologyRequest(required=rack), 8, 24_000),
        (TopologyRequest(preferred=rack), 16, 48_000),
        (TopologyRequest(unconstrained=True), 4, 8_000),
        (TopologyRequest(required=block, slices=(SliceLayer(level=host, size=4),)), 32, 24_000),
    )
    total = 0
    for q in range(queues):
        for i in range(per_queue):
            request, pods, cpu = shapes[(q + i) % len(shapes)]
            engine.add_workload(
                Workload(
                    namespace="ns",
                    name=f"w{q}-{i}",
                    uid=f"w{q}-{i}",
                    queue_name=f"lq{q}",
                    creation_time=float(i),
                    pod_sets=(PodSet(count=pods, requests={"cpu": cpu}, topology_request=request),),
                )
            )
            total += 1
    samples: list[tuple[int, float]] = []
    running: list[tuple[int, str]] = []
    admitted = 0
    cycle = 0
    start_cpu = time.process_time()
    while admitted < total and cycle < 20 * total:
        cycle += 1
        clock.advance(0.001)
        while running and running[0][0] <= cycle:
            engine.finish(running.pop(0)[1])
        start = time.perf_counter()
        result = engine.schedule()
        samples.append((result.heads, time.perf_counter() - start))
        admitted += len(result.admitted)
        running.extend((cycle + 20, a.key) for a in result.admitted)
        if result.heads == 0 and not running:
            break
    cpu = time.process_time() - start_cpu
    full = [s for h, s in samples if h == queues]
    chosen = full if len(full) >= 20 else [s for h, s in samples if h > 0]
    return {
        "nodes": nodes,
        "queues": queues,
        "workloads": total,
        "admitted": admitted,
        "cycles": len(samples),
        "cycles_with_all_heads": len(full),
        "median_ms": _ms(statistics.median(chosen)) if chosen else None,
        "p90_ms": _ms(_quantile(chosen, 0.9)) if chosen else None,
        "cpu_s": round(cpu, 3),
        "admissions_per_cpu_s": round(admitted / cpu, 1) if cpu else None,
        "peak_rss_mib": round(_peak_rss_mib(), 1),
    }


def run_part(name: str) -> dict[str, Any]:
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "cycle": part_cycle,
        "baseline": lambda: part_simulation("baseline.yaml"),
        "large": lambda: part_simulation("large-scale.yaml"),
        "memory": part_memory,
        "tas": part_tas,
    }
    return runners[name]()


# ---------------------------------------------------------------------------- report


def report(results: dict[str, Any]) -> str:
    lines = ["fleetq engine benchmark", ""]
    rows: list[tuple[str, str, str, str]] = []
    cycle = results.get("cycle")
    if cycle and "error" not in cycle:
        rows.append(
            (
                f"cycle, {cycle['heads_used']} heads (median)",
                f"{cycle['median_ms']:.3f} ms",
                f"<= {TARGETS['cycle_median_ms']} ms",
                _verdict(cycle["median_ms"] <= TARGETS["cycle_median_ms"]),
            )
        )
        rows.append(("cycle (p90)", f"{cycle['p90_ms']:.3f} ms", "", ""))
    for part, target in (("baseline", "baseline_cpu_s"), ("large", "large_cpu_s")):
        sim = results.get(part)
        if sim and "error" not in sim:
            rows.append(
                (
                    f"{part} simulation CPU",
                    f"{sim['cpu_s']:.2f} s",
                    f"<= {TARGETS[target]} s",
                    _verdict(sim["cpu_s"] <= TARGETS[target]),
                )
            )
            rows.append((f"{part} simulation peak RSS", f"{sim['peak_rss_mib']} MiB", "", ""))
    memory = results.get("memory")
    if memory and "error" not in memory:
        rows.append(("memory per 10k pending", f"{memory['mib_per_10k']} MiB", "", ""))
    tas = results.get("tas")
    if tas and "error" not in tas:
        label = f"tas cycle, {tas['queues']} queues, {tas['nodes']} nodes"
        rows.append((f"{label} (median)", f"{tas['median_ms']:.3f} ms", "", ""))
        rows.append(("tas cycle (p90)", f"{tas['p90_ms']:.3f} ms", "", ""))
        rows.append(
            (
                f"tas admitted {tas['admitted']}/{tas['workloads']}",
                f"{tas['admissions_per_cpu_s']} /CPU s",
                "",
                f"{tas['cpu_s']:.1f} CPU s",
            )
        )
    for part, value in results.items():
        if isinstance(value, dict) and "error" in value:
            rows.append((part, "FAILED", "", value["error"].splitlines()[-1][:60]))
    width = max((len(r[0]) for r in rows), default=10)
    lines += [f"{a.ljust(width)}  {b:>12}  {c:>10}  {d}".rstrip() for a, b, c, d in rows]
    for part, upstream in (("baseline", UPSTREAM_BASELINE), ("large", UPSTREAM_LARGE)):
        sim = results.get(part)
        if sim and "error" not in sim:
            lines += ["", f"{part}: simulated vs upstream's published averages"]
            lines += _comparison(sim["summary"], upstream)
    return "\n".join(lines)


def _comparison(summary: dict[str, Any], upstream: dict[str, Any]) -> list[str]:
    out = [f"  {'figure':<26}{'simulated':>12}{'upstream':>12}"]
    for wc in summary["workload_classes"]:
        ours = wc["avg_time_to_admission_s"]
        theirs = upstream["avg_time_to_admission_s"].get(wc["class_name"])
        out.append(f"  {'admit ' + wc['class_name'] + ' (s)':<26}{ours:>12.1f}{theirs or 0:>12.1f}")
    usage = summary["queue_classes"][0]["avg_usage"] * 100
    out.append(f"  {'cq usage (%)':<26}{usage:>12.1f}{upstream['usage'] * 100:>12.1f}")
    out.append(
        f"  {'makespan / wall (s)':<26}{summary['makespan_s']:>12.1f}{upstream['wall_s']:>12.1f}"
    )
    evictions = sum(wc["evictions"] for wc in summary["workload_classes"])
    out.append(f"  {'evictions':<26}{evictions:>12}{'':>12}")
    return out


# ---------------------------------------------------------------------------- plumbing


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _peak_rss_mib() -> float:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return peak_kib / 1024.0


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def _child(part: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", part],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip() or f"exit {proc.returncode}"}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _profile(part: str, top: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    run_part(part)
    profiler.disable()
    for order in ("tottime", "cumulative"):
        buffer = io.StringIO()
        stats = pstats.Stats(profiler, stream=buffer)
        stats.strip_dirs().sort_stats(order).print_stats(top)
        print(f"== {part}: top {top} by {order}")
        print(buffer.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--profile", choices=PARTS, help="cProfile one part in-process")
    parser.add_argument("--top", type=int, default=25, help="rows of profile output")
    parser.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(run_part(args.child)))
        return 0
    if args.profile:
        _profile(args.profile, args.top)
        return 0

    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {', '.join(PARTS)}")
    results: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "targets": TARGETS,
    }
    for part in parts:
        print(f"running {part} ...", file=sys.stderr, flush=True)
        results[part] = _child(part)
    print(report(results))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for path in (RESULTS / f"engine-{stamp}.json", RESULTS / "engine-latest.json"):
        path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {RESULTS / f'engine-{stamp}.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
