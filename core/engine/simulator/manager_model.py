"""How long the real manager takes for what the engine decides instantly.

The engine is pure: a scheduling cycle, an admission or a release takes no time on its clock.
A real manager spends time on each of them, and that time is what upstream's performance
test measures. The simulator therefore wraps the engine in this small, explicit model of a
manager process talking to an API server. Every figure is a parameter; the defaults follow
upstream's minimalkueue set-up of the scheduler performance test:

Scheduling loop (upstream ``pkg/scheduler`` + ``pkg/util/wait``)
    One thread runs cycles back to back while any ClusterQueue has a head; with no head it
    sleeps until a workload is queued (no cost). A cycle costs ``cycle_base_s`` plus
    ``cycle_per_head_s`` per head (estimates of snapshot and nomination work in Go). After a
    cycle that admitted nothing the loop backs off 1 ms, doubling up to 10 ms
    (``idle_backoff_*``); an admitting cycle resets the backoff.

API writes (the dominant cost)
    minimalkueue's client is limited to 50 requests/s with a burst of 100 (client-go token
    bucket, ``api_qps`` / ``api_burst``); waiters are served first come, first served.
    - an admission is assumed in the cache at once (quota is held from the cycle on) and
      its status patch is sent in the background: the workload shows ``Admitted`` when the
      patch gets a token plus ``write_latency_s``;
    - eviction patches of preemption victims and ``QuotaReserved=False`` patches of heads
      whose pending message changed are sent from the scheduling thread, so the cycle ends
      only when the last of them got its token and returned;
    - once a victim's eviction completes, the workload controller writes its ``Requeued``
      condition (a background write that only consumes budget).

The test runner (upstream ``test/performance/scheduler/runner``, client at 1000 QPS, not
modelled as a limit)
    It creates workloads on schedule; the manager sees each create after
    ``watch_latency_s``. It starts a workload's runtime when it sees ``Admitted`` and marks it
    ``Finished`` when the runtime is up; it finishes an eviction by clearing the quota
    reservation as soon as it sees ``Evicted``. Each of these reaches the manager after
    ``write_latency_s + watch_latency_s``; only then is the quota released.

``ManagerModel.instant()`` switches every cost off: what is left is the engine's scheduling
quality alone, the lower bound of any implementation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerModel:
    """Virtual costs of the manager around the engine; see the module docstring."""

    name: str = "upstream-like"
    cycle_base_s: float = 0.001
    cycle_per_head_s: float = 0.00005
    idle_backoff_initial_s: float = 0.001
    idle_backoff_max_s: float = 0.010
    api_qps: float | None = 50.0
    """Manager client rate limit in requests per second; ``None`` = unlimited."""
    api_burst: int = 100
    write_latency_s: float = 0.002
    watch_latency_s: float = 0.001

    @classmethod
    def upstream_like(cls) -> ManagerModel:
        """The default: minimalkueue against a local API server, as upstream runs the test."""
        return cls()

    @classmethod
    def instant(cls) -> ManagerModel:
        """No cost anywhere: cycles, writes and watches all take zero virtual time."""
        return cls(
            name="instant",
            cycle_base_s=0.0,
            cycle_per_head_s=0.0,
            idle_backoff_initial_s=0.0,
            idle_backoff_max_s=0.0,
            api_qps=None,
            write_latency_s=0.0,
            watch_latency_s=0.0,
        )

    def cycle_cost(self, heads: int) -> float:
        """Compute time of one cycle that looked at ``heads`` heads (writes not included)."""
        return self.cycle_base_s + self.cycle_per_head_s * heads

    def next_backoff(self, previous: float) -> float:
        """Pause after another cycle that admitted nothing, given the previous pause."""
        if previous <= 0.0:
            return self.idle_backoff_initial_s
        return min(previous * 2.0, self.idle_backoff_max_s)

    @property
    def propagation_s(self) -> float:
        """Runner write plus manager watch: how long a runner action takes to reach the engine."""
        return self.write_latency_s + self.watch_latency_s


MODELS: dict[str, ManagerModel] = {
    "upstream-like": ManagerModel.upstream_like(),
    "instant": ManagerModel.instant(),
}
"""Named presets, for the command line."""
