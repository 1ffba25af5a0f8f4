"""Drives upstream's scheduler-perf runner against a cluster whose manager we started.

The runner creates the generator's objects, marks each admitted Workload Finished once its
runtime has passed, completes evictions, and records what it sees until every active
ClusterQueue is idle; then it writes `summary.yaml` and CSVs and deletes what it created.
The moment `summary.yaml` appears is the end of the recorded run: CPU and writes are
measured up to it, so the clean-up afterwards counts for neither manager.

Bounded in time: the runner's own recorder limit is set beyond ours, and at our deadline
it gets SIGINT, on which it still writes a (partial) summary; the run is marked timed out.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.scheduler.measured_process import ExitUsage, MeasuredProcess
from devfleet.toolchain import binary_path

RUNNER_QPS = 1000
RUNNER_BURST = 2000
"""The runner's own client budget: what its envtest config gets upstream."""

SUMMARY_FILE = "summary.yaml"
WL_STATES = "wlStates.csv"
"""Per-workload CSV the runner writes beside the summary."""


def generator_makes_topology(generator_config: Path) -> bool:
    """Whether the runner will create a Topology, its TAS flavor and labelled nodes: a
    generator with a top-level `topology` (upstream's `configs/tas`) does."""
    data = yaml.safe_load(generator_config.read_text()) or {}
    return isinstance(data, dict) and data.get("topology") is not None


def with_cohort_count(generator_config: Path, count: int, into: Path) -> Path:
    """A copy of the generator whose every cohort set makes `count` cohorts: the same
    queues, workloads and topology per cohort, a fraction of the whole run (upstream's
    15,000-workload configs take 10-20 minutes a manager on 2 shared cores)."""
    data = yaml.safe_load(generator_config.read_text()) or {}
    for cohort_set in data.get("cohorts") or ():
        cohort_set["count"] = count
    into.mkdir(parents=True, exist_ok=True)
    scaled = into / f"{generator_config.stem}-{count}-cohorts.yaml"
    scaled.write_text(
        f"# {generator_config} with {count} cohort(s) per cohort set\n"
        + yaml.safe_dump(data, sort_keys=False)
    )
    return scaled


@dataclass(frozen=True, slots=True)
class RunnerInvocation:
    generator_config: Path
    output_dir: Path
    kubeconfig: Path
    timeout_s: float

    def argv(self) -> list[str]:
        recorder_limit = int(self.timeout_s) + 300  # ours ends the run first
        return [
            str(binary_path("runner")),
            "-o",
            str(self.output_dir),
            "-generatorConfig",
            str(self.generator_config),
            "-timeout",
            f"{recorder_limit}s",
            "-qps",
            str(RUNNER_QPS),
            "-burst",
            str(RUNNER_BURST),
            "-zap-log-level=info",
        ]


@dataclass(frozen=True, slots=True)
class RunnerOutcome:
    recorded_s: float | None
    """Runner start to `summary.yaml`: the wall time of the recorded run."""
    timed_out: bool
    abandoned: bool
    """Stopped early because `give_up` said so (the manager died, say)."""
    usage: ExitUsage
    log_path: Path

    @property
    def summary_path(self) -> Path:
        return self.log_path.parent / SUMMARY_FILE


def run_runner(
    invocation: RunnerInvocation,
    *,
    on_recorded: Callable[[], None],
    on_tick: Callable[[float], None] = lambda _: None,
    give_up: Callable[[], bool] = lambda: False,
    tick_seconds: float = 15.0,
) -> RunnerOutcome:
    """Run the runner to its end or our deadline; `on_recorded` fires when the summary shows.

    `give_up` is asked about once a second; when it answers True the runner is stopped at
    once (no point recording a run whose manager has died).
    """
    invocation.output_dir.mkdir(parents=True, exist_ok=True)
    summary = invocation.output_dir / SUMMARY_FILE
    summary.unlink(missing_ok=True)
    env = {**os.environ, "KUBECONFIG": str(invocation.kubeconfig)}
    log_path = invocation.output_dir / "runner.log"
    recorded_s: float | None = None
    timed_out = abandoned = False
    with MeasuredProcess(invocation.argv(), log_path=log_path, env=env) as runner:
        next_tick, next_check = tick_seconds, 1.0
        while True:
            elapsed = time.monotonic() - runner.started
            if recorded_s is None and summary.exists():
                recorded_s = elapsed
                on_recorded()
            usage = runner.poll()
            if usage is not None:
                break
            if elapsed >= next_check:
                abandoned = give_up()
                next_check += 1.0
            if elapsed > invocation.timeout_s or abandoned:
                timed_out = not abandoned
                usage = runner.stop(grace=60.0, first_signal=signal.SIGINT)
                if recorded_s is None and summary.exists():
                    recorded_s = time.monotonic() - runner.started
                    on_recorded()
                break
            if elapsed >= next_tick:
                on_tick(elapsed)
                next_tick += tick_seconds
            time.sleep(0.1)
    return RunnerOutcome(recorded_s, timed_out, abandoned, usage, log_path)
