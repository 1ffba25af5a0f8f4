"""The fleet file: the example loads as documented; every mistake is named with its place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.join.duration_text import DurationError, format_duration, parse_duration
from cli.join.fleet_file import (
    ClusterRef,
    FleetFileError,
    load_fleet_file,
    parse_fleet_file,
)

REPO = Path(__file__).resolve().parents[3]
FILE = Path("/fleet/clusters.yaml")


def minimal(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "manager": {"context": "hub"},
        "workers": [{"name": "w1", "context": "c1"}, {"name": "w2", "context": "c2"}],
    }
    document.update(changes)
    return document


def error_of(document: Any) -> str:
    with pytest.raises(FleetFileError) as caught:
        parse_fleet_file(document, FILE)
    return str(caught.value)


def test_the_example_file_loads_with_every_section_read() -> None:
    fleet = load_fleet_file(REPO / "clusters.example.yaml")
    assert fleet.manager.namespace == "kueue-system"
    assert (
        fleet.manager.cluster.kubeconfig
        == Path("~/.local/state/fleetq/fleets/demo/kubeconfigs/manager.kubeconfig").expanduser()
    )
    assert [w.name for w in fleet.workers] == ["worker-1", "worker-2"]
    assert fleet.workers[0].secret_name == "worker-1-kubeconfig"
    assert fleet.identity.token_lifetime_seconds == 30 * 86_400
    assert fleet.identity.rotate_before_seconds == 7 * 86_400
    assert fleet.identity.role_name == "fleetq-system:fleetq-multikueue"
    assert [ns.name for ns in fleet.mirror] == ["team-a", "team-b"]
    assert fleet.mirror[0].queues[0].cluster_queue == "cluster-queue"
    assert fleet.dispatch.dispatcher == "fleetq.dev/capacity-aware"
    (config,) = fleet.dispatch.configs
    assert (config.name, config.admission_check, config.workers) == (
        "fleet",
        "fleet",
        ("worker-1", "worker-2"),
    )


def test_defaults_fill_a_minimal_file() -> None:
    fleet = parse_fleet_file(minimal(), FILE)
    assert fleet.manager.cluster == ClusterRef(context="hub", kubeconfig=None)
    assert fleet.identity.namespace == "fleetq-system"
    assert fleet.identity.subject == "system:serviceaccount:fleetq-system:fleetq-multikueue"
    (config,) = fleet.dispatch.configs
    assert config.workers == ("w1", "w2")
    assert fleet.mirror == ()


def test_relative_kubeconfig_paths_are_taken_from_the_files_folder() -> None:
    document = minimal(workers=[{"name": "w1", "kubeconfig": "kube/w1.yaml"}])
    fleet = parse_fleet_file(document, FILE)
    assert fleet.workers[0].cluster.kubeconfig == Path("/fleet/kube/w1.yaml")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(["a"], "top level: must be a mapping", id="not-a-mapping"),
        pytest.param({"workers": [{"name": "w"}]}, "manager: is required", id="no-manager"),
        pytest.param(minimal(workers=[]), "workers: lists no cluster", id="no-workers"),
        pytest.param(
            minimal(workers=[{"name": "w1"}, {"name": "w1"}]),
            "workers[1].name: worker 'w1' is listed twice",
            id="duplicate-worker",
        ),
        pytest.param(
            minimal(workers=[{"name": "Worker_1"}]),
            "workers[0].name: 'Worker_1' is not a valid worker (MultiKueueCluster) name",
            id="bad-worker-name",
        ),
        pytest.param(
            minimal(workers=[{"name": "manager"}]),
            "workers[0].name: 'manager' names the manager",
            id="reserved-name",
        ),
        pytest.param(
            minimal(workers=[{"name": "w1", "contxt": "c"}]),
            "workers[0]: unknown field(s) contxt",
            id="typo-in-worker",
        ),
        pytest.param(
            minimal(identity={"tokenLifetme": "1d"}),
            "identity: unknown field(s) tokenLifetme",
            id="typo-in-identity",
        ),
        pytest.param(minimal(extra=1), "top level: unknown field(s) extra", id="typo-at-top"),
        pytest.param(
            minimal(identity={"tokenLifetime": "5m"}),
            "identity.tokenLifetime: must be at least 10m",
            id="lifetime-too-short",
        ),
        pytest.param(
            minimal(identity={"tokenLifetime": "a month"}),
            "identity.tokenLifetime: 'a month' is not a duration",
            id="lifetime-not-a-duration",
        ),
        pytest.param(
            minimal(kind="Cluster"), "kind: must be 'Fleet', not 'Cluster'", id="wrong-kind"
        ),
        pytest.param(
            minimal(workers=[{"name": "w1", "server": "http://w1:6443"}]),
            "workers[0].server: 'http://w1:6443' must be an https:// URL",
            id="plain-http-server",
        ),
        pytest.param(
            minimal(workers=[{"name": "w1", "context": 3}]),
            "workers[0].context: must be a string, not int",
            id="context-not-a-string",
        ),
        pytest.param(
            minimal(mirror=[{"namespace": "team-a", "localQueues": [{"name": "q"}]}]),
            "mirror[0].localQueues[0].clusterQueue: is required",
            id="queue-without-cluster-queue",
        ),
        pytest.param(
            minimal(mirror=[{"namespace": "team.a"}]),
            "mirror[0].namespace: 'team.a' is not a valid namespace name (a DNS-1123 label",
            id="namespace-with-dot",
        ),
        pytest.param(
            minimal(dispatch={"configs": [{"name": "c", "workers": ["w1", "w3"]}]}),
            "dispatch.configs[0].workers: names unknown worker(s) w3 (workers: w1, w2)",
            id="order-names-unknown-worker",
        ),
        pytest.param(
            minimal(dispatch={"configs": [{"name": "c", "workers": ["w1", "w1"]}]}),
            "dispatch.configs[0].workers: lists w1 more than once",
            id="order-repeats-worker",
        ),
        pytest.param(
            minimal(dispatch={"configs": [{"name": "c"}, {"name": "c", "admissionCheck": "d"}]}),
            "dispatch.configs: MultiKueueConfig c defined twice",
            id="duplicate-config",
        ),
        pytest.param(
            minimal(dispatch={"dispatcher": "incremental"}),
            "dispatch.dispatcher: 'incremental' is not a dispatcher name",
            id="dispatcher-without-domain",
        ),
    ],
)
def test_mistakes_are_reported_with_their_place(document: Any, expected: str) -> None:
    message = error_of(document)
    assert message.startswith(f"{FILE}: ")
    assert expected in message


def test_past_20_workers_a_config_is_a_cluster_set_and_past_1000_it_must_be_split() -> None:
    fleet = parse_fleet_file(minimal(workers=[{"name": f"w{i}"} for i in range(21)]), FILE)
    assert [config.uses_cluster_set for config in fleet.dispatch.configs] == [True]
    twenty = parse_fleet_file(minimal(workers=[{"name": f"w{i}"} for i in range(20)]), FILE)
    assert [config.uses_cluster_set for config in twenty.dispatch.configs] == [False]
    workers = [{"name": f"w{index}"} for index in range(1001)]
    assert "1001 workers do not fit one MultiKueueClusterSet" in error_of(minimal(workers=workers))
    workers = [{"name": f"w{index}"} for index in range(21)]
    split = {
        "configs": [
            {"name": "east", "workers": [f"w{index}" for index in range(11)]},
            {"name": "west", "workers": [f"w{index}" for index in range(11, 21)]},
        ]
    }
    fleet = parse_fleet_file(minimal(workers=workers, dispatch=split), FILE)
    assert [len(config.workers) for config in fleet.dispatch.configs] == [11, 10]


def test_unreadable_and_invalid_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(FleetFileError, match=r"cannot read fleet file .*missing\.yaml"):
        load_fleet_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("manager: [unclosed")
    with pytest.raises(FleetFileError, match=r"broken\.yaml is not valid YAML"):
        load_fleet_file(broken)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(minimal()))
    assert load_fleet_file(good).path == good


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 2_592_000), ("720h", 2_592_000), ("1h30m", 5_400), ("600", 600), (45, 45)],
)
def test_durations_read_like_go_with_days(text: str | int, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1x", "h", "30d junk", "-5", "1.5h"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_durations_print_with_their_two_largest_units() -> None:
    assert format_duration(29 * 86_400 + 23 * 3_600 + 59) == "29d23h"
    assert format_duration(300) == "5m"
    assert format_duration(0) == "0s"
    assert format_duration(-90) == "-1m30s"
