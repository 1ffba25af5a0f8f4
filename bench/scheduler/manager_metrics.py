"""A few counters both managers export under upstream's names, read from one scrape.

They cross-check the runner's view from inside each manager: how many scheduling cycles
it ran (and how many admitted nothing), how many workloads it admitted, evicted and
preempted. Gauges and histograms are left out: one scrape at the end says little about them.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

COUNTERS = {
    "admission_attempts": "kueue_admission_attempts_total",
    "admitted": "kueue_admitted_workloads_total",
    "evicted": "kueue_evicted_workloads_total",
    "preempted": "kueue_preempted_workloads_total",
    "quota_reserved": "kueue_quota_reserved_workloads_total",
}


def counter_totals(exposition: str) -> dict[str, float]:
    """Each counter of `COUNTERS` summed over its labels; attempts also split by result."""
    wanted = {sample: short for short, sample in COUNTERS.items()}
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            short = wanted.get(sample.name)
            if short is None:
                continue
            totals[short] = totals.get(short, 0.0) + sample.value
            result = sample.labels.get("result")
            if short == "admission_attempts" and result:
                key = f"admission_attempts_{result}"
                totals[key] = totals.get(key, 0.0) + sample.value
    return dict(sorted(totals.items()))
