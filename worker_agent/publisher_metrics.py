"""The capacity publisher's own Prometheus series, beside the hub's in the agent's registry."""

from __future__ import annotations

import enum

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_BUILD_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class WriteResult(enum.StrEnum):
    """Outcome of one attempt to write the report."""

    WRITTEN = "written"
    FAILED = "failed"


class PublisherMetrics:
    """Writes, their freshness and how long a report takes to build."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.writes = Counter(
            "fleetq_agent_capacity_report_writes_total",
            "Attempts to write the WorkerCapacity report, by result",
            ["result"],
            registry=self.registry,
        )
        self.last_write = Gauge(
            "fleetq_agent_capacity_report_last_write_timestamp_seconds",
            "When the WorkerCapacity report was last written (seconds since the epoch)",
            registry=self.registry,
        )
        self.build_seconds = Histogram(
            "fleetq_agent_capacity_report_build_seconds",
            "Time to build the WorkerCapacity report from the caches",
            buckets=_BUILD_BUCKETS,
            registry=self.registry,
        )

    def wrote(self, result: WriteResult, at: float | None = None) -> None:
        self.writes.labels(result=result.value).inc()
        if at is not None:
            self.last_write.set(at)
