"""Replay a generator scenario in real time through the manager's own scheduler loop.

The simulator charges a modelled cost per cycle; the hub's `SchedulerLoop` instead runs a
cycle whenever its `EngineHost` is woken, so how many cycles it runs depends on how events
spread in wall time. This replays a scenario's creations, finishes (after each workload's
runtime) and completed evictions on the wall clock into an `EngineHost`, runs the real
`SchedulerLoop`, and counts cycles, engine calls that woke the loop (by kind) and CPU,
without any apiserver.

    python bench/engine/loop_replay.py bench/scheduler/configs/small.yaml
    python bench/engine/loop_replay.py examples/simulate/baseline.yaml --speed 4 --qps 50

With `--qps` every status change the cycle made is one write through the manager's client
budget (`WriteBudget`, burst 100), and the runner sees an admission or eviction only once
its write got a token, so finishes spread in time as they do against an apiserver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cli.simulate_command import read_generator_file  # noqa: E402
from core.engine.config import EngineConfig  # noqa: E402
from core.engine.model import CycleResult  # noqa: E402
from core.engine.simulator.engine_objects import arrival_key, install_queues, workload  # noqa: E402
from core.engine.simulator.generator import Scenario, load_scenario  # noqa: E402
from core.engine.simulator.write_budget import WriteBudget  # noqa: E402
from core.manager.engine_host import EngineHost  # noqa: E402
from core.manager.scheduler_loop import SchedulerLoop  # noqa: E402

EVICTION_LATENCY_S = 0.005  # the runner clears an evicted workload's reservation


class ScaledClock:
    """Wall time since the start, multiplied by `speed` (scenario seconds)."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.start = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self.start) * self.speed


@dataclass
class Replay:
    """The runner's side: creates, finishes and completes evictions on schedule."""

    scenario: Scenario
    speed: float
    host: EngineHost
    budget: WriteBudget
    wakes: Counter[str] = field(default_factory=Counter)
    admissions: int = 0
    preemptions: int = 0
    finished: int = 0
    order: list[str] = field(default_factory=list)
    epochs: Counter[str] = field(default_factory=Counter)
    """Bumped on each admission and preemption: a finish of an older one is stale."""
    runtimes: dict[str, float] = field(default_factory=dict)

    def seconds(self, scenario_seconds: float) -> float:
        return scenario_seconds / self.speed

    def wake(self, kind: str) -> None:
        self.wakes[kind] += 1
        self.host.wake()

    def written(self) -> float:
        """Wall seconds until a write issued now has its token."""
        now = self.host.engine.clock.now()
        return self.seconds(self.budget.acquire(now) - now)

    def on_cycle(self, result: CycleResult) -> None:
        loop = asyncio.get_running_loop()
        for admitted in result.admitted:
            self.admissions += 1
            self.order.append(admitted.key)
            self.epochs[admitted.key] += 1
            runtime = self.seconds(self.runtimes[admitted.key]) + self.written()
            epoch = self.epochs[admitted.key]
            loop.call_later(runtime, self.finish, admitted.key, epoch)
        for record in result.preempted:
            self.preemptions += 1
            self.epochs[record.victim] += 1
            after = EVICTION_LATENCY_S + self.written()
            loop.call_later(after, self.complete_eviction, record.victim)
        decided = {a.key for a in result.admitted} | {r.victim for r in result.preempted}
        for key in result.changed:
            if key not in decided:
                self.written()  # a pending note: it only spends budget

    def finish(self, key: str, epoch: int) -> None:
        if self.epochs[key] != epoch:
            return  # evicted meanwhile: the eviction's completion requeues it
        self.host.engine.finish(key)
        self.finished += 1
        self.wake("finish")

    def complete_eviction(self, key: str) -> None:
        self.host.engine.complete_eviction(key)
        self.wake("eviction")

    async def create_all(self) -> None:
        start = time.monotonic()
        self.runtimes = {arrival_key(a): a.runtime_ms / 1000.0 for a in self.scenario.arrivals}
        for arrival in self.scenario.arrivals:
            due = start + self.seconds(arrival.created_ms / 1000.0)
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.host.engine.add_workload(workload(arrival))
            self.wake("create")


class CountingLoop(SchedulerLoop):
    """The hub's loop, telling the replay what each cycle decided."""

    def __init__(self, host: EngineHost, replay: Replay) -> None:
        super().__init__(host)
        self.replay = replay

    def run_once(self) -> CycleResult:
        result = super().run_once()
        if result.heads:
            self.replay.on_cycle(result)
        return result


async def replay(
    config: Path, speed: float, timeout_s: float, qps: float | None = None
) -> dict[str, object]:
    scenario = load_scenario(read_generator_file(config))
    host = EngineHost(EngineConfig(release_quota_on_eviction=False), clock=ScaledClock(speed))
    install_queues(host.engine, scenario)
    runner = Replay(scenario, speed, host, WriteBudget(qps, 100))
    loop = CountingLoop(host, runner)
    cpu0, wall0 = time.process_time(), time.monotonic()
    total = len(scenario.arrivals)
    async with asyncio.TaskGroup() as group:
        scheduling = group.create_task(loop.run())
        await runner.create_all()
        deadline = time.monotonic() + timeout_s
        while runner.finished < total and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        scheduling.cancel()
    return {
        "config": str(config),
        "speed": speed,
        "qps": qps,
        "cycles": loop.cycles,
        "requeue_rounds": loop.requeue_rounds,
        "wakes": dict(runner.wakes),
        "admissions": runner.admissions,
        "preemptions": runner.preemptions,
        "finished": runner.finished,
        "workloads": total,
        "wall_s": round(time.monotonic() - wall0, 2),
        "cpu_s": round(time.process_time() - cpu0, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--speed", type=float, default=1.0, help="scenario seconds per second")
    parser.add_argument("--timeout", type=float, default=900.0, help="wall seconds at most")
    parser.add_argument("--qps", type=float, default=None, help="manager write budget (/s)")
    args = parser.parse_args(argv)
    figures = asyncio.run(replay(args.config, args.speed, args.timeout, args.qps))
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
