"""MultiKueue dispatch metrics: upstream's two counters plus fleetq's dispatch figures.

Upstream's names and labels (`multikueue_workloads_dispatched_total`,
`multikueue_workloads_admitted_total`, by `cluster_queue` and `cluster`) so dashboards
carry over, and fleetq's own under `fleetq_multikueue_*`:
- `fleetq_multikueue_worker_connected{cluster}`: 1 while the worker's caches serve;
- `fleetq_multikueue_dispatch_latency_seconds{cluster}`: the manager reserving quota
  to the worker admitting its copy, both as the apiservers recorded them;
- `fleetq_multikueue_remote_writes_total{cluster,verb}`: every write sent to a worker
  (the worker clients are written to by this package only, so this equals their
  write counters);
- `fleetq_multikueue_remote_writes_per_dispatch`: writes sent to workers for one
  workload from its first copy to its admission (creates, losers removed, the job), the
  cost DESIGN §5 tracks; AllAtOnce over N workers costs about 2N, capacity-aware 2.
Every series carries `replica_role`, as the hub's others do.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from core.kube.write_counter import WriteVerb

DISPATCH_LATENCY = "fleetq_multikueue_dispatch_latency_seconds"
"""Quota reserved on the manager to admission on the worker (the dashboard plots it too)."""
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600)
_WRITES_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)


class DispatchMetrics:
    def __init__(self, registry: CollectorRegistry, replica_role: str = "leader") -> None:
        self.replica_role = replica_role
        role = ["replica_role"]
        self.dispatched = Counter(
            "multikueue_workloads_dispatched_total",
            "Workload copies created on worker clusters",
            ["cluster_queue", "cluster", *role],
            registry=registry,
        )
        self.admitted = Counter(
            "multikueue_workloads_admitted_total",
            "Workloads admitted on a worker cluster",
            ["cluster_queue", "cluster", *role],
            registry=registry,
        )
        self.connected = Gauge(
            "fleetq_multikueue_worker_connected",
            "1 while the hub's connection to the worker cluster serves, else 0",
            ["cluster", *role],
            registry=registry,
        )
        self.latency = Histogram(
            DISPATCH_LATENCY,
            "Quota reserved on the manager to admission on the worker",
            ["cluster", *role],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.remote_writes = Counter(
            "fleetq_multikueue_remote_writes_total",
            "API writes sent to worker clusters",
            ["cluster", "verb", *role],
            registry=registry,
        )
        self.writes_per_dispatch = Histogram(
            "fleetq_multikueue_remote_writes_per_dispatch",
            "Worker API writes spent to dispatch one workload (first copy to admission)",
            role,
            buckets=_WRITES_BUCKETS,
            registry=registry,
        )

    def copy_created(self, cluster_queue: str, cluster: str) -> None:
        self.dispatched.labels(cluster_queue, cluster, self.replica_role).inc()

    def workload_admitted(
        self, cluster_queue: str, cluster: str, latency: float | None, writes: int
    ) -> None:
        self.admitted.labels(cluster_queue, cluster, self.replica_role).inc()
        if latency is not None and latency >= 0:
            self.latency.labels(cluster, self.replica_role).observe(latency)
        self.writes_per_dispatch.labels(self.replica_role).observe(writes)

    def remote_write(self, cluster: str, verb: WriteVerb) -> None:
        self.remote_writes.labels(cluster, verb.value, self.replica_role).inc()

    def worker_state(self, cluster: str, connected: bool) -> None:
        self.connected.labels(cluster, self.replica_role).set(1 if connected else 0)
