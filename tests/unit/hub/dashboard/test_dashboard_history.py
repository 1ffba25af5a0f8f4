"""The history behind the plots: bounded rings, oldest first, dispatch latency per interval."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from hub.dashboard.history import (
    HISTORY_SAMPLES,
    MAX_SERIES,
    DispatchLatency,
    FleetHistory,
    HistorySampler,
    Sample,
    memory_bound,
    queue_counts,
)
from hub.multikueue.dispatch.dispatch_metrics import DispatchMetrics


def sample(at: float, queues: dict[str, tuple[int, int]], **latency: float) -> Sample:
    return Sample(at=at, queues=queues, latency=latency)


def test_the_defaults_keep_six_hours_of_ten_second_samples_in_a_stated_bound() -> None:
    history = FleetHistory()
    assert history.capacity * history.interval_seconds == 6 * 3600
    assert memory_bound() == HISTORY_SAMPLES * (8 + 4 * MAX_SERIES) < 9_000_000


def test_a_full_ring_overwrites_its_oldest_samples_and_memory_stays_bounded() -> None:
    history = FleetHistory(capacity=5, max_series=4)
    for t in range(12):
        history.record(sample(float(t), {"cq": (t, 2 * t)}))
        assert len(history) == min(t + 1, 5)
        assert history.memory_bytes() <= memory_bound(5, 4)
    body = history.view()
    assert body["times"] == [7.0, 8.0, 9.0, 10.0, 11.0]
    [cq] = body["clusterQueues"]
    assert cq["pending"] == [7, 8, 9, 10, 11]
    assert cq["admitted"] == [14, 16, 18, 20, 22]


def test_series_beyond_the_bound_are_dropped_not_grown() -> None:
    history = FleetHistory(capacity=3, max_series=4)
    many = {f"cq-{i}": (i, i) for i in range(10)}  # 20 series wanted, 4 allowed
    for t in range(6):
        history.record(sample(float(t), many, w1=1.5))
    assert len(history.series()) == 4
    assert history.dropped > 0
    assert history.memory_bytes() <= memory_bound(3, 4)


def test_a_queue_that_appears_later_has_gaps_before_and_is_forgotten_a_ring_after_it_goes() -> None:
    history = FleetHistory(capacity=4)
    history.record(sample(0.0, {"a": (1, 0)}))
    history.record(sample(10.0, {"a": (1, 0), "b": (3, 1)}))
    b = next(q for q in history.view()["clusterQueues"] if q["name"] == "b")
    assert b["pending"] == [None, 3]
    for t in range(2, 6):
        history.record(sample(10.0 * t, {"a": (0, 1)}))  # b deleted
    assert ("pending", "b") not in history.series()
    assert [q["name"] for q in history.view()["clusterQueues"]] == ["a"]


def test_the_view_is_rebuilt_only_after_a_new_sample() -> None:
    history = FleetHistory(capacity=4)
    history.record(sample(0.0, {"a": (1, 0)}))
    first = history.view()
    assert history.view() is first
    history.record(sample(10.0, {"a": (2, 0)}))
    assert history.view() is not first


def test_dispatch_latency_is_the_mean_of_the_dispatches_of_each_interval() -> None:
    registry = CollectorRegistry()
    metrics = DispatchMetrics(registry)
    latency = DispatchLatency(registry)
    assert latency.since_last() == {}
    metrics.workload_admitted("cq", "w1", 2.0, 2)
    metrics.workload_admitted("cq", "w1", 4.0, 2)
    metrics.workload_admitted("cq", "w2", 10.0, 2)
    assert latency.since_last() == {"w1": 3.0, "w2": 10.0}
    assert latency.since_last() == {}  # nothing dispatched since: a gap, not a repeat
    metrics.workload_admitted("cq", "w2", 1.0, 2)
    assert latency.since_last() == {"w2": 1.0}


def test_the_sampler_records_queue_counts_from_cluster_queue_status_and_latency() -> None:
    registry = CollectorRegistry()
    metrics = DispatchMetrics(registry)
    cqs = [
        {"metadata": {"name": "gpu"}, "status": {"pendingWorkloads": 4, "admittedWorkloads": 2}},
        {"metadata": {"name": "cpu"}, "status": {}},
    ]
    assert queue_counts(cqs) == {"gpu": (4, 2), "cpu": (0, 0)}
    clock = iter([100.0, 110.0])
    sampler = HistorySampler(
        FleetHistory(capacity=10), lambda: cqs, DispatchLatency(registry), lambda: next(clock)
    )
    sampler.sample_now()
    metrics.workload_admitted("gpu", "w1", 0.5, 2)
    sampler.sample_now()
    body = sampler.history.view()
    assert body["times"] == [100.0, 110.0]
    gpu = next(q for q in body["clusterQueues"] if q["name"] == "gpu")
    assert (gpu["pending"], gpu["admitted"]) == ([4, 4], [2, 2])
    assert body["dispatchLatency"] == [{"worker": "w1", "seconds": [None, 0.5]}]
    assert not any(math.isnan(t) for t in body["times"])
