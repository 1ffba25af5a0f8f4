"""The stage trace orders each workload's logged milestones and summarises every step."""

from __future__ import annotations

import json
from pathlib import Path

from bench.multikueue.stage_trace import main, milestones, read_leg, step_figures


def _line(event: str, second: float, **fields: object) -> str:
    stamp = f"2026-11-29T23:00:{second:09.6f}Z"
    return json.dumps({**fields, "event": event, "level": "info", "timestamp": stamp})


def _hub_lines(name: str, start: float, reserve_after: float) -> list[str]:
    key = f"bench/{name}"
    return [
        _line("job.create_workload", start, job=f"bench/{name[4:-6]}", workload=name),
        _line("workload.quota_reserved", start + reserve_after, workload=key),
        _line(
            "multikueue.status_written",
            start + reserve_after + 0.5,
            workload=key,
            change="Nominate",
        ),
        # A repeated event keeps its first time.
        _line("multikueue.status_written", start + 9.0, workload=key, change="Nominate"),
    ]


def test_steps_are_ordered_per_workload_and_slowest_first() -> None:
    lines = _hub_lines("job-steady-00001-abcde", 1.0, 0.25) + _hub_lines(
        "job-steady-00002-bcdef", 2.0, 4.0
    )
    lines.append("not json")
    lines.append(_line("workload.quota_reserved", 3.0, workload="bench/job-warmup-00001-x"))
    figures = step_figures(milestones("hub", lines, phase="steady"))
    assert [f.step for f in figures] == [
        "hub job.create_workload -> hub workload.quota_reserved",
        "hub workload.quota_reserved -> hub multikueue.status_written:Nominate",
    ]
    reserve = figures[0]
    assert reserve.count == 2
    assert reserve.p50 == 0.25
    assert reserve.longest == 4.0
    assert figures[1].p90 == 0.5


def test_reads_hub_and_agent_logs_of_a_leg(tmp_path: Path) -> None:
    key = "bench/job-steady-00003-cdefa"
    (tmp_path / "hub.log").write_text(
        "\n".join(
            [
                _line("multikueue.copy_created", 1.0, workload=key, cluster="worker-1"),
                _line("multikueue.job_created", 3.0, workload=key, cluster="worker-1"),
            ]
        )
    )
    (tmp_path / "agent-worker-1.log").write_text(
        _line("workload.quota_reserved", 1.5, workload=key)
    )
    stages = {p.stage for p in read_leg(tmp_path, "steady")}
    assert stages == {
        "hub multikueue.copy_created",
        "hub multikueue.job_created",
        "agent-worker-1 workload.quota_reserved",
    }
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--phase", "burst"]) == 1
