"""The side-by-side table with upstream's rangespec bars, the metrics read from a scrape,
minimalkueue's TAS switch, and kwokctl's argument order."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.scheduler.comparison_table import format_table, headline_figures, ratio
from bench.scheduler.manager_metrics import counter_totals
from bench.scheduler.managers import ManagerKind, prepare_launch
from bench.scheduler.perf_runner import generator_makes_topology, with_cohort_count
from bench.scheduler.rangespec import Bars, RangespecError, rangespec_beside, read_rangespec
from bench.scheduler.tuned_cluster import kwokctl_safe_order


def _leg(wall: float, writes: int, small_wait: float, error: str | None = None) -> dict:
    return {
        "run_wall_s": wall,
        "manager_writes": writes,
        "manager_writes_by_kind": {"create events": 100, "patch workloads/status": writes - 100},
        "workloads": 300,
        "workload_classes": {"small": {"avg_time_to_admission_s": small_wait, "evictions": 4}},
        "queue_usage_percent": {"cq": 80.0},
        "metrics": {},
        "error": error,
    }


def test_ratios_are_fleetq_over_upstream_and_skip_missing_figures() -> None:
    legs = {"upstream": _leg(60.0, 3000, 20.0), "fleetq": _leg(45.0, 1500, 5.0)}
    figures = {f.label: f for f in headline_figures(legs)}
    assert ratio(figures["run wall time (s)"], "fleetq", "upstream") == pytest.approx(0.75)
    assert ratio(figures["manager writes per workload"], "fleetq", "upstream") == 0.5
    not_events = figures["  of which not Events, per workload"]
    assert not_events.values == {"upstream": pytest.approx(2900 / 300), "fleetq": 1400 / 300}
    assert ratio(figures["manager peak RSS (MiB)"], "fleetq", "upstream") is None


def test_table_shows_both_columns_the_ratio_and_failures() -> None:
    legs = {"upstream": _leg(60.0, 3000, 20.0), "fleetq": _leg(45.0, 1500, 5.0, "boom\nmore")}
    table = format_table(legs)
    wall = next(line for line in table.splitlines() if line.startswith("run wall time"))
    assert wall.split()[-3:] == ["60", "45", "0.75"]
    assert "avg time to admission, small (s)" in table
    assert table.splitlines()[-1] == "fleetq: FAILED: boom"
    assert "never-admitted" not in table


def test_never_admitted_workloads_are_shown_with_a_note() -> None:
    upstream, fleetq = _leg(60.0, 3000, 20.0), _leg(45.0, 1500, 5.0)
    fleetq["never_admitted"] = {"small": 7, "large": 0}
    table = format_table({"upstream": upstream, "fleetq": fleetq})
    row = next(line for line in table.splitlines() if line.startswith("  never admitted"))
    assert row.split()[-2:] == ["7", "-"]
    assert "count never-admitted workloads as 0 s" in table


def test_a_single_leg_has_no_ratio_column() -> None:
    assert "fleetq/upstream" not in format_table({"fleetq": _leg(45.0, 1500, 5.0)})


def test_counters_are_summed_over_labels_and_attempts_split_by_result() -> None:
    scrape = """\
# HELP kueue_admission_attempts_total Attempts
# TYPE kueue_admission_attempts_total counter
kueue_admission_attempts_total{result="success",replica_role="standalone"} 7
kueue_admission_attempts_total{result="inadmissible",replica_role="standalone"} 3
# HELP kueue_admitted_workloads_total Admitted
# TYPE kueue_admitted_workloads_total counter
kueue_admitted_workloads_total{cluster_queue="a",priority_class=""} 2
kueue_admitted_workloads_total{cluster_queue="b",priority_class=""} 5
# HELP kueue_pending_workloads Pending
# TYPE kueue_pending_workloads gauge
kueue_pending_workloads{cluster_queue="a",status="active"} 9
"""
    assert counter_totals(scrape) == {
        "admission_attempts": 10.0,
        "admission_attempts_inadmissible": 3.0,
        "admission_attempts_success": 7.0,
        "admitted": 7.0,
    }


def test_kwokctl_pairs_put_each_components_first_pair_in_front() -> None:
    pairs = [
        "kube-apiserver=bind-address=127.0.0.1",
        "etcd=listen-client-urls=http://127.0.0.1:1",
        "etcd=listen-peer-urls=http://127.0.0.1:2",
        "kube-apiserver=max-requests-inflight=800",
    ]
    ordered = kwokctl_safe_order(pairs)
    assert ordered[:2] == [pairs[0], pairs[1]]
    assert sorted(ordered) == sorted(pairs)
    # kwokctl v0.8.0 files a component's later pairs under the index of its first pair.
    first_index: dict[str, int] = {}
    for index, pair in enumerate(ordered):
        first_index.setdefault(pair.split("=", 1)[0], index)
    assert sorted(first_index.values()) == list(range(len(first_index)))


RANGESPEC = """\
cmd:
  maxWallMs: 482_000
clusterQueueClassesMinUsage:
  cq: 57.0
wlClassesMaxAvgTimeToAdmissionMs:
  small: 10_000
"""


def test_upstreams_rangespec_bars_are_read_in_seconds_and_percent(tmp_path: Path) -> None:
    path = tmp_path / "rangespec.yaml"
    path.write_text(RANGESPEC)
    (tmp_path / "generator.yaml").write_text("cohorts: []\n")
    assert rangespec_beside(tmp_path / "generator.yaml") == path
    bars = read_rangespec(path)
    assert bars == Bars(482.0, {"cq": 57.0}, {"small": 10.0})
    assert Bars.from_json(bars.to_json()) == bars


def test_a_rangespec_with_a_non_number_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "rangespec.yaml"
    path.write_text("wlClassesMaxAvgTimeToAdmissionMs:\n  small: soon\n")
    with pytest.raises(RangespecError, match=r"wlClassesMaxAvgTimeToAdmissionMs\.small"):
        read_rangespec(path)


def test_the_table_shows_each_bar_and_who_misses_it(tmp_path: Path) -> None:
    path = tmp_path / "rangespec.yaml"
    path.write_text(RANGESPEC)
    # upstream: wall 60 s (met), small 20 s (missed), usage 80 % (met);
    # fleetq: small 5 s (met), usage 50 % (missed: a minimum).
    upstream, fleetq = _leg(60.0, 3000, 20.0), _leg(45.0, 1500, 5.0)
    fleetq["queue_usage_percent"] = {"cq": 50.0}
    table = format_table({"upstream": upstream, "fleetq": fleetq}, bars=read_rangespec(path))
    lines = table.splitlines()
    assert lines[0].split()[-4:] == ["upstream's", "bar", "missed", "by"]

    def row(prefix: str) -> list[str]:
        return next(line for line in lines if line.startswith(prefix)).split()

    assert row("run wall time")[-3:] == ["<=", "482", "none"]
    assert row("avg time to admission, small")[-3:] == ["<=", "10", "upstream"]
    assert row("ClusterQueue usage, cq")[-3:] == [">=", "57", "fleetq"]
    assert row("manager peak RSS")[-1] == "-"  # unbounded rows carry no bar


def test_minimalkueue_gets_its_tas_controllers_only_for_a_topology_config(
    tmp_path: Path,
) -> None:
    tas = tmp_path / "tas.yaml"
    tas.write_text("topology:\n  name: t\n  levels: []\ncohorts: []\n")
    plain = tmp_path / "plain.yaml"
    plain.write_text("cohorts: []\n")
    assert generator_makes_topology(tas) and not generator_makes_topology(plain)
    kubeconfig = tmp_path / "kubeconfig"
    with_tas = prepare_launch(ManagerKind.UPSTREAM, kubeconfig, tmp_path, topology=True)
    without = prepare_launch(ManagerKind.UPSTREAM, kubeconfig, tmp_path)
    assert with_tas.argv[-1] == "--enableTAS"
    assert "--enableTAS" not in without.argv


def test_a_config_scaled_to_fewer_cohorts_keeps_everything_else(tmp_path: Path) -> None:
    source = tmp_path / "generator.yaml"
    source.write_text(
        "topology: {name: t, levels: [{name: rack, count: 10}]}\n"
        "cohorts:\n"
        "- className: cohort\n  count: 5\n  queuesSets: [{className: cq, count: 6}]\n"
    )
    scaled = yaml.safe_load(with_cohort_count(source, 1, tmp_path / "out").read_text())
    assert scaled["cohorts"][0]["count"] == 1
    assert scaled["cohorts"][0]["queuesSets"] == [{"className": "cq", "count": 6}]
    assert scaled["topology"]["levels"] == [{"name": "rack", "count": 10}]
