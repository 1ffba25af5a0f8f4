"""What the machine was doing during a phase: each cluster's control plane (etcd and
kube-apiserver) and the whole machine's busy cores.

Every process of the benchmark shares the same few cores, so a dispatch latency means
little without knowing who had them: a fleet whose apiservers take most of the machine is
bound by the machine, not by the manager (bench/README.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.scheduler.measured_process import total_cpu_seconds
from bench.scheduler.tuned_cluster import pids_mentioning
from devfleet.fleet import Fleet


def machine_busy_seconds() -> float:
    """CPU seconds the machine spent not idle (all cores, all processes) since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class LoadMark:
    at: float
    machine_busy_s: float
    control_plane_cpu_s: dict[str, float]


class MachineLoad:
    """Marks taken before and after a phase; `between` turns two marks into figures."""

    def __init__(self, fleet: Fleet, roles: Sequence[str]) -> None:
        # Each cluster's processes carry its kwokctl directory in their command lines.
        self._pids = {role: pids_mentioning(f"/{fleet.kwok_cluster_name(role)}/") for role in roles}

    def mark(self) -> LoadMark:
        return LoadMark(
            at=time.monotonic(),
            machine_busy_s=machine_busy_seconds(),
            control_plane_cpu_s={role: total_cpu_seconds(p) for role, p in self._pids.items()},
        )

    @staticmethod
    def between(start: LoadMark, end: LoadMark) -> dict[str, object]:
        wall = max(end.at - start.at, 1e-9)
        cores = {
            role: round((end.control_plane_cpu_s[role] - start.control_plane_cpu_s[role]) / wall, 2)
            for role in start.control_plane_cpu_s
        }
        return {
            "control_plane_cores": cores,
            "machine_busy_cores": round((end.machine_busy_s - start.machine_busy_s) / wall, 2),
            "machine_cores": os.cpu_count() or 1,
        }
