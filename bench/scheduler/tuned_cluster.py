"""A fresh lite cluster (etcd + kube-apiserver) per manager, tuned as upstream's perf run is.

devfleet starts clusters for development and tests; a benchmark needs two things more from
the apiserver, passed to kwokctl as extra arguments without changing devfleet:
- higher in-flight request limits, as upstream's perf runner gives its envtest apiserver
  (v0.19.2's `runner/main.go`: 5000 and 2500, up from v0.17.0's 800 and 400; the
  defaults, 400 and 200, throttle a manager under load);
- an audit log of write requests, so writes can be counted per client (`audit_writes`).
Each manager gets its own cluster, started from scratch and deleted afterwards, so neither
inherits the other's etcd history or caches.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from devfleet.cluster_access import ClusterAccess
from devfleet.fleet import Fleet
from devfleet.fleet_spec import load_fleet_spec
from devfleet.kwokctl import Kwokctl

Progress = Callable[[str], None]

UPSTREAM_MAX_REQUESTS_INFLIGHT = 5000
UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT = 2500
"""The in-flight limits upstream v0.19.2's perf runner gives its apiserver."""


@dataclass(frozen=True, slots=True)
class ApiserverTuning:
    max_requests_inflight: int = UPSTREAM_MAX_REQUESTS_INFLIGHT
    max_mutating_requests_inflight: int = UPSTREAM_MAX_MUTATING_REQUESTS_INFLIGHT
    audit_policy: Path | None = None

    def extra_arg_pairs(self) -> list[str]:
        """`component=key=value` pairs for kwokctl's --extra-args."""
        return [
            f"kube-apiserver=max-requests-inflight={self.max_requests_inflight}",
            f"kube-apiserver=max-mutating-requests-inflight={self.max_mutating_requests_inflight}",
        ]

    def create_flags(self) -> list[str]:
        if self.audit_policy is None:
            return []
        return ["--kube-audit-policy", str(self.audit_policy)]


def kwokctl_safe_order(pairs: list[str]) -> list[str]:
    """Order `component=key=value` pairs so kwokctl v0.8.0 files each under its component.

    kwokctl remembers a component's patch by the position of its first pair on the command
    line, not by the patch's own index, so a second component whose first pair is not the
    second pair overall panics (index out of range) or lands on the wrong component. With
    every component's first pair leading, in order, positions and patch indices agree.
    """
    firsts: dict[str, int] = {}
    for index, pair in enumerate(pairs):
        firsts.setdefault(pair.split("=", 1)[0], index)
    leading = sorted(firsts.values())
    return [pairs[i] for i in leading] + [p for i, p in enumerate(pairs) if i not in leading]


@dataclass(frozen=True)
class TunedKwokctl(Kwokctl):
    """kwokctl that adds the benchmark's apiserver arguments to `create cluster`."""

    tuning: ApiserverTuning = ApiserverTuning()

    def create_args(self, name: str, *, lite: bool, config: Path | None) -> list[str]:
        return [*super().create_args(name, lite=lite, config=config), *self.tuning.create_flags()]

    def loopback_args(self, ports: Sequence[int]) -> list[str]:  # type: ignore[override]
        """devfleet's loopback pairs plus ours, in an order kwokctl files correctly."""
        base = Kwokctl.loopback_args(ports)
        pairs = [arg for arg in base if arg != "--extra-args"] + self.tuning.extra_arg_pairs()
        return [arg for pair in kwokctl_safe_order(pairs) for arg in ("--extra-args", pair)]


class BenchCluster:
    """One lite cluster for one benchmark leg; a context manager that always tears it down."""

    def __init__(self, name: str, tuning: ApiserverTuning, progress: Progress = print) -> None:
        self.fleet = Fleet(name)
        self.fleet.kwokctl = TunedKwokctl(self.fleet.kwokctl.workdir, tuning=tuning)
        self.progress = progress
        self._access: ClusterAccess | None = None

    @property
    def access(self) -> ClusterAccess:
        if self._access is None:
            raise RuntimeError("the cluster is not up")
        return self._access

    @property
    def state_dir(self) -> Path:
        return self.fleet.dir

    def __enter__(self) -> BenchCluster:
        spec = load_fleet_spec().with_worker_count(0)
        running = self.fleet.up(spec, lite=True, progress=self.progress)
        self._access = running.manager
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        leftovers = self.fleet.down(progress=lambda _: None)
        if leftovers:
            self.progress(f"cluster {self.fleet.name}: ports still open: {', '.join(leftovers)}")
        self._access = None

    def audit_logs(self) -> list[Path]:
        """The apiserver's audit log files (rotated ones included), oldest first."""
        found = [p for p in self.state_dir.rglob("audit*.log*") if p.is_file()]
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def control_plane_pids(self) -> list[int]:
        """etcd and kube-apiserver: every process started with this cluster's directory."""
        return pids_mentioning(str(self.state_dir))


def pids_mentioning(marker: str) -> list[int]:
    """Processes whose command line contains `marker` (never this process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return sorted(found)
