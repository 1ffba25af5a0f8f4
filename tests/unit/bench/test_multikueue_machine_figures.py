"""The benchmark's machine figures: per-workload request counts and busy cores."""

from __future__ import annotations

from collections import Counter

from bench.multikueue.apiserver_requests import per_workload
from bench.multikueue.machine_load import LoadMark, MachineLoad, machine_busy_seconds


def test_requests_per_workload_are_the_phase_delta_with_small_rows_dropped() -> None:
    before = {"manager": Counter({"POST jobs": 10, "PATCH workloads/status": 40, "GET x": 5})}
    after = {
        "manager": Counter({"POST jobs": 110, "PATCH workloads/status": 440, "GET x": 6}),
        "worker-1": Counter({"POST workloads": 100}),
    }
    figures = per_workload(before, after, workloads=100)
    assert figures == {
        "manager": {"PATCH workloads/status": 4.0, "POST jobs": 1.0},  # GET x: 0.01, dropped
        "worker-1": {"POST workloads": 1.0},  # no earlier reading: counted from zero
    }
    assert list(figures["manager"]) == ["PATCH workloads/status", "POST jobs"]  # most first


def test_busy_cores_and_control_planes_are_rates_over_the_marks() -> None:
    start = LoadMark(at=100.0, machine_busy_s=1000.0, control_plane_cpu_s={"manager": 50.0})
    end = LoadMark(at=110.0, machine_busy_s=1019.0, control_plane_cpu_s={"manager": 58.5})
    figures = MachineLoad.between(start, end)
    assert figures["machine_busy_cores"] == 1.9
    assert figures["control_plane_cores"] == {"manager": 0.85}


def test_machine_busy_seconds_only_grow() -> None:
    first = machine_busy_seconds()
    sum(i * i for i in range(200_000))  # some work of our own
    assert machine_busy_seconds() >= first > 0
