"""fleetq's MultiKueue figures over each upstream leg's, the default one and the budget one."""

from __future__ import annotations

from typing import Any

from bench.multikueue.run import comparison


def leg(throughput: float, p99: float, writes: float, cpu: float) -> dict[str, Any]:
    phase = {
        "phase": "steady",
        "throughput_per_s": throughput,
        "latency_p50_s": p99 / 2,
        "latency_p99_s": p99,
        "remote_writes_per_workload": writes,
        "manager_cpu_s": cpu,
    }
    return {"phases": [phase]}


def test_each_upstream_leg_gets_its_own_ratios() -> None:
    legs = {
        "upstream": leg(1.0, 100.0, 5.0, 50.0),
        "upstream-budget": leg(8.0, 20.0, 5.0, 40.0),
        "fleetq": leg(16.0, 10.0, 2.0, 10.0),
    }
    rows = {row["against"]: row for row in comparison(legs)}
    assert set(rows) == {"upstream", "upstream-budget"}
    assert rows["upstream"]["throughput_x"] == 16.0
    assert rows["upstream-budget"]["throughput_x"] == 2.0
    assert rows["upstream-budget"]["p99_ratio"] == 0.5
    assert rows["upstream-budget"]["remote_writes_ratio"] == 0.4


def test_without_fleetq_there_is_nothing_to_compare() -> None:
    assert comparison({"upstream": leg(1.0, 1.0, 1.0, 1.0)}) == []
