"""The simulator: generator parsing and expansion, the manager model, hand-checked runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main as fleetq_main
from cli.simulate_command import GeneratorFileError, read_generator_file
from core.engine.config import EngineConfig
from core.engine.simulator import (
    GeneratorConfigError,
    ManagerModel,
    SimulationSummary,
    format_summary,
    load_scenario,
    run_simulation,
)
from core.engine.simulator.generator import PreemptionPolicy
from core.engine.simulator.summary import QueueClassSummary, WorkloadClassSummary
from core.engine.simulator.write_budget import WriteBudget

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "simulate"
INSTANT = ManagerModel.instant()


def wl_set(
    count: int,
    interval_ms: int,
    class_name: str,
    runtime_ms: int,
    *,
    priority: int = 0,
    request: int | str = 1,
) -> dict[str, Any]:
    return {
        "count": count,
        "creationIntervalMs": interval_ms,
        "workloads": [
            {
                "className": class_name,
                "runtimeMs": runtime_ms,
                "priority": priority,
                "request": request,
            }
        ],
    }


def one_queue(*sets: dict[str, Any], nominal: int | str = 1, **queue: Any) -> dict[str, Any]:
    """A config with one cohort holding one ClusterQueue fed by ``sets``."""
    return {
        "cohorts": [
            {
                "className": "cohort",
                "count": 1,
                "queuesSets": [
                    {
                        "className": "cq",
                        "count": 1,
                        "nominalQuota": nominal,
                        "workloadsSets": list(sets),
                        **queue,
                    }
                ],
            }
        ]
    }


def wl_class(summary: SimulationSummary, name: str) -> WorkloadClassSummary:
    return next(c for c in summary.workload_classes if c.class_name == name)


def cq_class(summary: SimulationSummary, name: str = "cq") -> QueueClassSummary:
    return next(c for c in summary.queue_classes if c.class_name == name)


# ---------------------------------------------------------------- generator format


def test_baseline_example_expands_to_upstreams_shape() -> None:
    scenario = load_scenario(read_generator_file(EXAMPLES / "baseline.yaml"))

    assert len(scenario.queues) == 30
    assert len(scenario.cohorts) == 5
    assert len(scenario.arrivals) == 15_000
    queue = scenario.queues[0]
    assert queue.name == "cq-0-0-cohort-0"
    assert queue.nominal_milli == 20_000
    assert queue.borrowing_limit_milli == 100_000
    assert queue.reclaim_within_cohort is PreemptionPolicy.ANY
    assert queue.within_cluster_queue is PreemptionPolicy.LOWER_PRIORITY
    per_class = {name: 0 for name in ("small", "medium", "large")}
    for arrival in scenario.arrivals:
        per_class[arrival.class_name] += 1
    assert per_class == {"small": 10_500, "medium": 3_000, "large": 1_500}
    assert scenario.arrivals[-1].created_ms == 60_000  # 50 large every 1.2 s


def test_large_scale_example_expands_to_50000_workloads_in_1000_queues() -> None:
    scenario = load_scenario(read_generator_file(EXAMPLES / "large-scale.yaml"))

    assert len(scenario.queues) == 1_000
    assert len(scenario.arrivals) == 50_000
    assert {q.nominal_milli for q in scenario.queues} == {20_000}
    assert max(a.created_ms for a in scenario.arrivals) == 3_300  # 11 medium every 300 ms


def test_workload_sets_run_side_by_side_and_wait_before_each_workload() -> None:
    config = one_queue(
        wl_set(3, 100, "a", 10),
        {
            "count": 2,
            "creationIntervalMs": 250,
            "workloads": [
                {"className": "b", "runtimeMs": 1, "request": "500m"},
                {"className": "c", "runtimeMs": 1, "request": 2},
            ],
        },
    )
    scenario = load_scenario(config)

    timeline = [(a.created_ms, a.name, a.request_milli) for a in scenario.arrivals]
    assert timeline == [
        (100, "a-0-0-0", 1000),
        (200, "a-0-1-0", 1000),
        (250, "b-1-0-0", 500),
        (300, "a-0-2-0", 1000),
        (500, "c-1-0-1", 2000),
        (750, "b-1-1-0", 500),
        (1000, "c-1-1-1", 2000),
    ]
    assert {a.namespace for a in scenario.arrivals} == {"cq-0-0-cohort-0"}


def test_missing_borrowing_limit_means_unlimited_and_policies_default_to_never() -> None:
    queue = load_scenario(one_queue(wl_set(1, 1, "a", 1))).queues[0]

    assert queue.borrowing_limit_milli is None
    assert queue.reclaim_within_cohort is PreemptionPolicy.NEVER
    assert queue.within_cluster_queue is PreemptionPolicy.NEVER


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"cohorts": []}, "at least one cohort"),
        ({"cohort": [{"className": "c", "count": 1}]}, "cohort"),
        (one_queue(wl_set(1, 1, "a", 1), nominal="lots"), "nominalQuota"),
        (one_queue(wl_set(1, 1, "a", 1), nominal=-1), "negative"),
        (one_queue(wl_set(1, 1, "a", 1), withinClusterQueue="Sometimes"), "Sometimes"),
        (one_queue(wl_set(1, 1, "a", 1, request="1x")), "request"),
        ({**one_queue(wl_set(1, 1, "a", 1)), "topology": {"name": "t"}}, "topology"),
    ],
)
def test_bad_configs_are_rejected_with_the_offending_field(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(GeneratorConfigError, match=message):
        load_scenario(config)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GeneratorFileError, match="cannot read"):
        read_generator_file(tmp_path / "nope.yaml")


# ---------------------------------------------------------------- write budget


def test_write_budget_grants_the_burst_at_once_then_one_per_interval() -> None:
    budget = WriteBudget(qps=10.0, burst=3)

    grants = [budget.acquire(0.0) for _ in range(5)]

    assert grants == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])
    assert budget.granted == 5


def test_write_budget_refills_while_idle() -> None:
    budget = WriteBudget(qps=10.0, burst=2)
    for _ in range(4):
        budget.acquire(0.0)

    assert budget.acquire(10.0) == pytest.approx(10.0)
    assert budget.acquire(10.0) == pytest.approx(10.0)
    assert budget.acquire(10.0) == pytest.approx(10.1)


def test_unlimited_write_budget_never_delays() -> None:
    budget = WriteBudget(qps=None, burst=1)

    assert [budget.acquire(1.5) for _ in range(3)] == [1.5, 1.5, 1.5]


# ---------------------------------------------------------------- hand-checked runs


def test_spaced_workloads_are_admitted_at_once_and_finish_after_their_runtime() -> None:
    # Created at 1 s, 2 s, 3 s; each runs 0.5 s on a queue that fits one at a time.
    summary = run_simulation(one_queue(wl_set(3, 1000, "job", 500)), model=INSTANT)

    job = wl_class(summary, "job")
    assert (job.count, job.admitted, job.finished, job.evictions) == (3, 3, 3, 0)
    assert job.avg_time_to_admission_s == pytest.approx(0.0)
    assert job.avg_time_to_finish_s == pytest.approx(0.5)
    assert summary.makespan_s == pytest.approx(3.5)
    # 1.5 cpu-seconds of work over 3.5 s on 1 cpu of quota.
    assert cq_class(summary).avg_usage == pytest.approx(1.5 / 3.5)
    assert summary.unfinished == 0


def test_workloads_that_do_not_fit_together_run_one_after_another() -> None:
    # Created at 0.1, 0.2, 0.3 s, each 1 s long, one cpu of quota: admitted at 0.1, 1.1, 2.1.
    summary = run_simulation(one_queue(wl_set(3, 100, "job", 1000)), model=INSTANT)

    job = wl_class(summary, "job")
    assert job.avg_time_to_admission_s == pytest.approx((0.0 + 0.9 + 1.8) / 3)
    assert job.avg_time_to_finish_s == pytest.approx((1.0 + 1.9 + 2.8) / 3)
    assert summary.makespan_s == pytest.approx(3.1)
    assert cq_class(summary).avg_usage == pytest.approx(3.0 / 3.1)
    assert cq_class(summary).max_usage_milli == 1000


def test_higher_priority_preempts_and_the_victim_runs_again_afterwards() -> None:
    # low (prio 1) starts at 0.1 s; high (prio 10) arrives at 0.5 s and evicts it; high runs
    # 0.5-1.5 s, then low runs again 1.5-2.5 s. Upstream's recorder keeps the last admission.
    config = one_queue(
        wl_set(1, 100, "low", 1000, priority=1),
        wl_set(1, 500, "high", 1000, priority=10),
        withinClusterQueue="LowerPriority",
    )
    summary = run_simulation(config, model=INSTANT)

    low, high = wl_class(summary, "low"), wl_class(summary, "high")
    assert (low.evictions, high.evictions) == (1, 0)
    assert high.avg_time_to_admission_s == pytest.approx(0.0)
    assert low.avg_time_to_admission_s == pytest.approx(1.4)
    assert low.avg_time_to_finish_s == pytest.approx(2.4)
    assert summary.makespan_s == pytest.approx(2.5)
    assert summary.preemptions == 1
    # Quota was held 0.1-0.5 (low), 0.5-1.5 (high), 1.5-2.5 (low).
    assert cq_class(summary).avg_usage == pytest.approx(2.4 / 2.5)


def test_an_engine_releasing_quota_on_eviction_gives_the_same_instant_run() -> None:
    config = one_queue(
        wl_set(1, 100, "low", 1000, priority=1),
        wl_set(1, 500, "high", 1000, priority=10),
        withinClusterQueue="LowerPriority",
    )
    held = run_simulation(config, model=INSTANT)
    released = run_simulation(
        config, model=INSTANT, engine_config=EngineConfig(release_quota_on_eviction=True)
    )

    # Only the workload controller's write after a completed eviction is missing.
    assert dataclasses.replace(released, api_writes=0) == dataclasses.replace(held, api_writes=0)
    assert released.api_writes == held.api_writes - 1


def test_a_preemptor_waits_until_the_runner_has_stopped_its_victim() -> None:
    # The victim keeps its quota until its eviction patch landed, the runner saw it and
    # cleared the reservation, and the manager saw that: 2 x (write + watch) after the grant.
    model = dataclasses.replace(
        ManagerModel.upstream_like(),
        cycle_base_s=0.001,
        cycle_per_head_s=0.0,
        write_latency_s=0.002,
        watch_latency_s=0.001,
        api_qps=None,
    )
    config = one_queue(
        wl_set(1, 100, "low", 1000, priority=1),
        wl_set(1, 500, "high", 1000, priority=10),
        withinClusterQueue="LowerPriority",
    )
    summary = run_simulation(config, model=model)

    high = wl_class(summary, "high")
    assert wl_class(summary, "low").evictions == 1
    # seen 0.501, cycle to 0.502, eviction done 0.508, next cycle admits, runner sees +3 ms
    assert 0.012 <= high.avg_time_to_admission_s < 0.05


def test_without_preemption_the_late_high_priority_workload_waits() -> None:
    config = one_queue(
        wl_set(1, 100, "low", 1000, priority=1),
        wl_set(1, 500, "high", 1000, priority=10),
    )
    summary = run_simulation(config, model=INSTANT)

    assert summary.preemptions == 0
    assert wl_class(summary, "high").avg_time_to_admission_s == pytest.approx(0.6)
    assert summary.makespan_s == pytest.approx(2.1)


def two_queues(borrowing_limit: int | None) -> dict[str, Any]:
    """Queue ``busy`` gets two 1-cpu jobs at once; queue ``idle`` lends its 1 cpu."""
    busy: dict[str, Any] = {
        "className": "busy",
        "count": 1,
        "nominalQuota": 1,
        "workloadsSets": [wl_set(2, 100, "job", 1000), wl_set(1, 100, "twin", 1000)],
    }
    if borrowing_limit is not None:
        busy["borrowingLimit"] = borrowing_limit
    idle = {"className": "idle", "count": 1, "nominalQuota": 1, "workloadsSets": []}
    return {"cohorts": [{"className": "c", "count": 1, "queuesSets": [busy, idle]}]}


def test_a_queue_borrows_idle_quota_from_its_cohort() -> None:
    # job-0 and twin arrive together at 0.1 s; the cohort has 2 cpu, so both start then;
    # job-1 (0.2 s) waits for the first to finish at 1.1 s.
    summary = run_simulation(two_queues(borrowing_limit=None), model=INSTANT)

    assert summary.makespan_s == pytest.approx(2.1)
    assert wl_class(summary, "twin").avg_time_to_admission_s == pytest.approx(0.0)
    assert cq_class(summary, "busy").max_usage_milli == 2000
    assert cq_class(summary, "idle").max_usage_milli == 0


def test_a_zero_borrowing_limit_keeps_a_queue_within_its_own_quota() -> None:
    summary = run_simulation(two_queues(borrowing_limit=0), model=INSTANT)

    assert summary.makespan_s == pytest.approx(3.1)
    assert cq_class(summary, "busy").max_usage_milli == 1000


def test_the_upstream_like_model_adds_cycle_write_and_watch_latency() -> None:
    model = dataclasses.replace(
        ManagerModel.upstream_like(),
        cycle_base_s=0.001,
        cycle_per_head_s=0.0,
        write_latency_s=0.002,
        watch_latency_s=0.001,
        api_qps=None,
    )
    summary = run_simulation(one_queue(wl_set(1, 100, "job", 500)), model=model)

    # seen at 0.101, cycle until 0.102, patch lands 0.104, runner sees it 0.105.
    job = wl_class(summary, "job")
    assert job.avg_time_to_admission_s == pytest.approx(0.005)
    # runner finishes at 0.605; the manager sees that 3 ms later.
    assert summary.makespan_s == pytest.approx(0.608)


def test_a_tight_write_budget_delays_admissions() -> None:
    # Ten 1-cpu jobs arrive together-ish on a 10-cpu queue; one write per second means the
    # k-th admission lands about k seconds after the first.
    config = one_queue(wl_set(10, 1, "job", 100), nominal=10)
    slow = dataclasses.replace(INSTANT, api_qps=1.0, api_burst=1)

    fast_summary = run_simulation(config, model=INSTANT)
    slow_summary = run_simulation(config, model=slow)

    assert wl_class(fast_summary, "job").avg_time_to_admission_s == pytest.approx(0.0)
    assert wl_class(slow_summary, "job").avg_time_to_admission_s > 3.0
    assert slow_summary.api_writes >= 10


def test_until_stops_the_run_and_counts_what_did_not_finish() -> None:
    summary = run_simulation(one_queue(wl_set(3, 100, "job", 1000)), model=INSTANT, until_s=1.5)

    assert summary.unfinished == 2
    assert wl_class(summary, "job").finished == 1


def test_a_workload_larger_than_any_quota_stays_pending_and_the_run_ends() -> None:
    config = one_queue(wl_set(1, 100, "fits", 100), wl_set(1, 100, "huge", 100, request=5))
    summary = run_simulation(config, model=INSTANT)

    assert wl_class(summary, "huge").admitted == 0
    assert wl_class(summary, "fits").finished == 1
    assert summary.unfinished == 1


def test_same_config_gives_the_same_summary() -> None:
    config = one_queue(
        wl_set(30, 20, "low", 150, priority=1, request=2),
        wl_set(10, 70, "high", 300, priority=5, request=3),
        nominal=5,
        withinClusterQueue="LowerPriority",
    )
    model = ManagerModel.upstream_like()

    assert run_simulation(config, model=model) == run_simulation(config, model=model)


# ---------------------------------------------------------------- report and command line


def test_format_summary_shows_every_class_and_the_makespan() -> None:
    summary = run_simulation(one_queue(wl_set(3, 1000, "job", 500)), model=INSTANT)

    text = format_summary(summary)

    assert "job" in text
    assert "cq" in text
    assert "makespan 3.500 s" in text
    assert "42.9 %" in text  # 1.5 cpu·s over 3.5 s


def test_command_line_prints_the_table_or_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(json.dumps(one_queue(wl_set(2, 1000, "job", 500))))  # JSON is YAML

    assert fleetq_main(["simulate", "--config", str(path), "--model", "instant"]) == 0
    assert "makespan 2.500 s" in capsys.readouterr().out

    assert fleetq_main(["simulate", "--config", str(path), "--model", "instant", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["makespan_s"] == pytest.approx(2.5)
    assert data["workload_classes"][0]["class_name"] == "job"


def test_command_line_reports_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text("cohorts: []\n")

    assert fleetq_main(["simulate", "--config", str(path)]) == 2
    assert "at least one cohort" in capsys.readouterr().err
