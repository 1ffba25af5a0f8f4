"""One leg of the side-by-side run: one manager on its own fresh cluster, start to teardown.

Order, each step undone on the way out whatever happens: start a lite cluster (tuned
apiserver, write audit) → install the manager's CRDs → start the manager and wait until
it is ready → run upstream's runner → scrape the manager's metrics → stop the manager
(its exit usage) → count writes in the audit log → delete the cluster. CPU of the manager
and of apiserver+etcd is sampled when the runner starts and when its summary appears.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.scheduler.audit_writes import AUDIT_POLICY, read_audit_log, tally_writes
from bench.scheduler.crd_install import install_crds
from bench.scheduler.leg_result import LegResult
from bench.scheduler.manager_metrics import counter_totals
from bench.scheduler.managers import (
    ManagerKind,
    check_prerequisites,
    http_get,
    prepare_launch,
    wait_ready,
)
from bench.scheduler.measured_process import MeasuredProcess, total_cpu_seconds
from bench.scheduler.perf_runner import (
    WL_STATES,
    RunnerInvocation,
    RunnerOutcome,
    generator_makes_topology,
    run_runner,
)
from bench.scheduler.runner_summary import RunnerSummaryError, read_summary, read_workload_states
from bench.scheduler.tuned_cluster import (
    UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT,
    UPSTREAM_MAX_REQUESTS_INFLIGHT,
    ApiserverTuning,
    BenchCluster,
)

Progress = Callable[[str], None]
SETTLE_SECONDS = 2.0
"""Pause between "ready" and the runner's start, so start-up work does not overlap the run."""


@dataclass(frozen=True, slots=True)
class LegOptions:
    generator_config: Path
    output_dir: Path
    timeout_s: float
    max_requests_inflight: int = UPSTREAM_MAX_REQUESTS_INFLIGHT
    max_mutating_requests_inflight: int = UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT
    keep_audit_log: bool = False
    fleetq_log_level: str = "warning"


@dataclass(frozen=True, slots=True)
class _Mark:
    """A moment of the run: wall clock and cumulative CPU seconds."""

    at: dt.datetime
    manager_cpu_s: float | None
    control_plane_cpu_s: float


def run_leg(kind: ManagerKind, options: LegOptions, progress: Progress = print) -> LegResult:
    """Measure one manager; failures are recorded in the result, never left running."""
    leg_dir = options.output_dir / kind.value
    leg_dir.mkdir(parents=True, exist_ok=True)
    result = LegResult(kind.value, str(options.generator_config), str(leg_dir))
    try:
        check_prerequisites(kind)
        _measure(kind, options, leg_dir, result, progress)
    except KeyboardInterrupt:
        result.error = "interrupted"
        raise
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        (leg_dir / "error.txt").write_text(traceback.format_exc())
        progress(f"[{kind}] FAILED: {result.error.splitlines()[0]}")
    return result


def _measure(
    kind: ManagerKind, options: LegOptions, leg_dir: Path, result: LegResult, progress: Progress
) -> None:
    def say(message: str) -> None:
        progress(f"[{kind}] {message}")

    policy = leg_dir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    tuning = ApiserverTuning(
        options.max_requests_inflight, options.max_mutating_requests_inflight, policy
    )
    started = time.monotonic()
    with BenchCluster(f"bench-{kind.value}-{_suffix()}", tuning, progress=say) as cluster:
        result.cluster_ready_s = round(time.monotonic() - started, 2)
        kubeconfig = cluster.access.kubeconfig
        launch = prepare_launch(
            kind,
            kubeconfig,
            leg_dir,
            options.fleetq_log_level,
            topology=generator_makes_topology(options.generator_config),
        )
        crds = install_crds(kubeconfig, launch.crd_dir)
        say(f"{len(crds)} CRDs installed from {launch.crd_dir}")
        with MeasuredProcess(launch.argv, log_path=leg_dir / "manager.log") as manager:
            result.manager_ready_s = round(wait_ready(manager, launch), 2)
            say(f"manager ready in {result.manager_ready_s:.1f}s (pid {manager.pid})")
            time.sleep(SETTLE_SECONDS)
            invocation = RunnerInvocation(
                options.generator_config, leg_dir, kubeconfig, options.timeout_s
            )
            outcome, start, end = _drive(invocation, manager, cluster, result, say)
            status, body = http_get(launch.metrics_url)
            if status == 200:
                result.metrics = counter_totals(body)
            peak_rss = manager.peak_rss_kib()
            usage = manager.stop()
        result.manager_exit_code = usage.exit_code
        result.manager_cpu_total_s = round(usage.cpu_s, 2)
        result.manager_peak_rss_mib = round(max(usage.max_rss_kib, peak_rss or 0) / 1024, 1)
        if start.manager_cpu_s is not None and end.manager_cpu_s is not None:
            result.manager_cpu_run_s = round(end.manager_cpu_s - start.manager_cpu_s, 2)
        result.control_plane_cpu_run_s = round(
            end.control_plane_cpu_s - start.control_plane_cpu_s, 2
        )
        _count_writes(cluster, launch.user_agent_prefix, start.at, end.at, result)
        if options.keep_audit_log:
            for path in cluster.audit_logs():
                (leg_dir / path.name).write_bytes(path.read_bytes())
    _read_runner_files(outcome, result)
    say(f"done; cluster removed ({time.monotonic() - started:.0f}s in all)")


def _drive(
    invocation: RunnerInvocation,
    manager: MeasuredProcess,
    cluster: BenchCluster,
    result: LegResult,
    say: Progress,
) -> tuple[RunnerOutcome, _Mark, _Mark]:
    """Run the runner; return its outcome and the marks at its start and at its summary."""
    control_plane = cluster.control_plane_pids()
    marks: dict[str, _Mark] = {}

    def mark(name: str) -> None:
        now = dt.datetime.now(dt.UTC)
        marks[name] = _Mark(now, manager.cpu_seconds(), total_cpu_seconds(control_plane))

    def tick(elapsed: float) -> None:
        cpu = manager.cpu_seconds()
        say(
            f"runner at {elapsed:.0f}s; manager " + ("exited" if cpu is None else f"{cpu:.1f}s CPU")
        )

    say(f"runner started ({invocation.generator_config.name}, limit {invocation.timeout_s:.0f}s)")
    result.load_average_at_start = os.getloadavg()
    mark("start")
    outcome = run_runner(
        invocation,
        on_recorded=lambda: mark("recorded"),
        on_tick=tick,
        give_up=lambda: manager.poll() is not None,
    )
    if "recorded" not in marks:
        mark("recorded")
    result.timed_out = outcome.timed_out
    result.run_wall_s = None if outcome.recorded_s is None else round(outcome.recorded_s, 2)
    result.runner_cpu_s = round(outcome.usage.cpu_s, 2)
    result.runner_exit_code = outcome.usage.exit_code
    say(
        f"runner exited {outcome.usage.exit_code} after {outcome.usage.wall_s:.0f}s"
        + (" (TIMED OUT)" if outcome.timed_out else "")
    )
    return outcome, marks["start"], marks["recorded"]


def _read_runner_files(outcome: RunnerOutcome, result: LegResult) -> None:
    try:
        result.take_summary(read_summary(outcome.summary_path))
        result.take_stragglers(read_workload_states(outcome.summary_path.with_name(WL_STATES)))
    except RunnerSummaryError as exc:
        result.error = f"no runner summary: {exc}. Runner log: {outcome.log_path}"
    if outcome.abandoned:
        result.error = f"manager exited during the run (code {result.manager_exit_code})"
    elif result.manager_exit_code not in (0, None) and result.error is None:
        result.error = f"manager exited with code {result.manager_exit_code}; see manager.log"


def _count_writes(
    cluster: BenchCluster,
    manager_agent: str,
    since: dt.datetime,
    until: dt.datetime,
    result: LegResult,
) -> None:
    logs = cluster.audit_logs()
    if not logs:
        return
    writes = list(read_audit_log(logs))
    result.take_writes(
        tally_writes(writes, agent_prefix=manager_agent, since=since, until=until),
        tally_writes(writes, agent_prefix="runner/", since=since, until=until),
    )


def _suffix() -> str:
    return f"{int(time.time()) % 100000:05d}"
