"""The runner's summary.yaml is read with upstream's checker formulas."""

from __future__ import annotations

import pytest

from bench.scheduler.runner_summary import RunnerSummaryError, parse_summary, parse_workload_states

SUMMARY = """\
clusterQueueClasses:
  cq:
    cpuAverageUsage: 24537
    cpuUsed: 1348333000
    firstEventTime: "2026-11-29T20:20:49.936283019Z"
    lastEventTime: "2026-11-29T20:21:44.886719223Z"
    nominalQuota: 30000
droppedWorkloadEvents: 2
workloadClasses:
  large:
    averageTimeToAdmissionMs: 7352
    averageTimeToFinishMs: 9378
    count: 30
    totalEvictions: 0
  small:
    averageTimeToAdmissionMs: 24461
    averageTimeToFinishMs: 25108
    count: 180
    totalEvictions: 105
"""


def test_workload_classes_are_read_in_seconds_and_summed() -> None:
    summary = parse_summary(SUMMARY)
    assert summary.workload_classes["small"].avg_time_to_admission_s == pytest.approx(24.461)
    assert summary.workload_classes["large"].avg_time_to_finish_s == pytest.approx(9.378)
    assert summary.workloads == 210
    assert summary.evictions == 105
    assert summary.dropped_events == 2


def test_usage_is_cpu_integral_over_quota_times_monitored_time() -> None:
    queues = parse_summary(SUMMARY).queue_classes["cq"]
    assert queues.monitored_ms == 54950
    # 1,348,333,000 mCPU*ms / (30,000 mCPU * 54,950 ms) = 81.79 %
    assert queues.usage_percent == pytest.approx(81.79, abs=0.01)


def test_usage_is_unknown_when_nothing_was_monitored() -> None:
    text = SUMMARY.replace("20:21:44.886719223Z", "20:20:49.936283019Z")
    assert parse_summary(text).queue_classes["cq"].usage_percent is None


def test_a_malformed_timestamp_names_the_field() -> None:
    with pytest.raises(RunnerSummaryError, match=r"clusterQueueClasses\.cq\.lastEventTime"):
        parse_summary(SUMMARY.replace('"2026-11-29T20:21:44.886719223Z"', "yesterday"))


def test_a_summary_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(RunnerSummaryError, match="mapping"):
        parse_summary("- just\n- a list\n")


def test_stragglers_are_counted_per_class_from_the_workload_csv() -> None:
    text = (
        "id,class name,namespace,name,ms to admitted,ms to finish,num evictions\n"
        "0,small,ns,small-0,1500,2000,0\n"
        "1,small,ns,small-1,0,0,0\n"
        "2,small,ns,small-2,900,0,1\n"
        "3,large,ns,large-0,100,1200,0\n"
        "4,large,ns,large-1,0,1100,0\n"  # first seen already admitted
    )
    stragglers = parse_workload_states(text)
    assert stragglers.never_admitted == {"large": 0, "small": 1}
    assert stragglers.not_finished == {"large": 0, "small": 2}


def test_a_workload_csv_without_the_expected_columns_is_refused() -> None:
    with pytest.raises(RunnerSummaryError, match="expected columns"):
        parse_workload_states("id,name\n0,x\n")
