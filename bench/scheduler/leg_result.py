"""What one manager's leg of the benchmark measured; stored as JSON, read by the table."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.scheduler.audit_writes import WriteTally
from bench.scheduler.runner_summary import RunnerSummary, Stragglers


@dataclass(slots=True)
class LegResult:
    """Figures of one manager on one fresh cluster. None: not measured (see `error`)."""

    manager: str
    generator_config: str
    output_dir: str
    error: str | None = None
    timed_out: bool = False
    load_average_at_start: tuple[float, float, float] | None = None
    """The machine's 1/5/15-minute load when the runner started: other work skews figures."""
    cluster_ready_s: float | None = None
    manager_ready_s: float | None = None

    run_wall_s: float | None = None
    """Runner start to its summary: generation, queueing and execution of every workload."""
    manager_cpu_run_s: float | None = None
    """Manager user+sys CPU during the recorded run only."""
    manager_cpu_total_s: float | None = None
    """Manager user+sys CPU over its whole life (start-up, run, clean-up, shut-down)."""
    manager_peak_rss_mib: float | None = None
    manager_exit_code: int | None = None
    control_plane_cpu_run_s: float | None = None
    """kube-apiserver + etcd CPU during the recorded run: the cost the manager's traffic adds."""
    runner_cpu_s: float | None = None
    runner_exit_code: int | None = None

    workloads: int | None = None
    evictions: int | None = None
    dropped_runner_events: int | None = None
    workload_classes: dict[str, dict[str, float]] = field(default_factory=dict)
    queue_usage_percent: dict[str, float | None] = field(default_factory=dict)
    never_admitted: dict[str, int] = field(default_factory=dict)
    not_finished: dict[str, int] = field(default_factory=dict)

    manager_writes: int | None = None
    manager_writes_failed: int | None = None
    manager_writes_by_kind: dict[str, int] = field(default_factory=dict)
    runner_writes: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    def take_summary(self, summary: RunnerSummary) -> None:
        self.workloads = summary.workloads
        self.evictions = summary.evictions
        self.dropped_runner_events = summary.dropped_events
        self.workload_classes = {
            name: {
                "count": figures.count,
                "evictions": figures.evictions,
                "avg_time_to_admission_s": figures.avg_time_to_admission_s,
                "avg_time_to_finish_s": figures.avg_time_to_finish_s,
            }
            for name, figures in summary.workload_classes.items()
        }
        self.queue_usage_percent = {
            name: figures.usage_percent for name, figures in summary.queue_classes.items()
        }

    def take_stragglers(self, stragglers: Stragglers) -> None:
        self.never_admitted = stragglers.never_admitted
        self.not_finished = stragglers.not_finished

    def take_writes(self, manager: WriteTally, runner: WriteTally) -> None:
        self.manager_writes = manager.total
        self.manager_writes_failed = manager.failed
        self.manager_writes_by_kind = manager.by_kind
        self.runner_writes = runner.total

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
