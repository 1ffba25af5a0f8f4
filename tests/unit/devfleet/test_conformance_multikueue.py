"""The pure parts of `fleetq dev conformance --suite multikueue`: the kind names, the
certificate SANs, the hosts-file block, the suite's merged kubeconfig, the suite entry; and
the loopback relay over real sockets."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from devfleet.conformance import ConformanceOptions, suite_arguments
from devfleet.conformance_multikueue import MULTIKUEUE_FLEET, apiserver_sans
from devfleet.conformance_stand_in import MANAGER_CONFIG_KEY, manager_config_map_manifest
from devfleet.conformance_suites import MULTIKUEUE, suite_named
from devfleet.fleet_spec import parse_fleet_spec
from devfleet.hosts_file import BEGIN, END, ensure_entries, with_block
from devfleet.kind_names import kind_clusters
from devfleet.loopback_relay import Endpoint, LoopbackRelay
from devfleet.suite_kubeconfig import SuiteKubeconfigError, suite_kubeconfig
from devfleet.toolchain import tool


def test_clusters_get_upstreams_default_kind_names_contexts_and_control_plane_servers() -> None:
    manager, worker1, worker2 = kind_clusters("manager", ["worker-1", "worker-2"])
    assert (manager.kind_name, manager.context, manager.loopback) == (
        "kind-manager",
        "kind-kind-manager",
        None,
    )
    assert worker1.context == "kind-kind-worker1"
    # util.GetClusterServerAddress("kind-worker1") of v0.19.2:
    assert worker1.control_plane_server == "https://kind-worker1-control-plane:6443"
    assert (worker1.loopback, worker2.loopback) == ("127.0.0.2", "127.0.0.3")
    assert worker2.certificate_sans == ("kind-worker2-control-plane", "127.0.0.3")
    assert manager.certificate_sans == ()


def test_the_suite_needs_two_workers() -> None:
    with pytest.raises(ValueError, match="needs 2 workers, the fleet has 1"):
        kind_clusters("manager", ["worker-1"])


def test_only_workers_apiservers_get_the_control_plane_names_in_their_certificates() -> None:
    assert apiserver_sans() == {
        "worker-1": ("kind-worker1-control-plane", "127.0.0.2"),
        "worker-2": ("kind-worker2-control-plane", "127.0.0.3"),
    }
    spec = parse_fleet_spec(MULTIKUEUE_FLEET)
    assert [c.name for c in spec.clusters] == ["manager", "worker-1", "worker-2"]
    (group,) = spec.workers[0].node_groups
    assert group.labels == {
        "instance-type": "on-demand",
        "cloud.provider.com/node-group": "tas-node",
    }


def test_the_hosts_block_is_added_once_rewritten_in_place_and_keeps_other_lines() -> None:
    original = "127.0.0.1 localhost\n127.0.0.1 vm\n"
    entries = {"kind-worker1-control-plane": "127.0.0.2", "kind-worker2-control-plane": "127.0.0.3"}
    once = with_block(original, entries)
    assert once == (
        f"127.0.0.1 localhost\n127.0.0.1 vm\n\n{BEGIN}\n127.0.0.2 kind-worker1-control-plane\n"
        f"127.0.0.3 kind-worker2-control-plane\n{END}\n"
    )
    assert with_block(once, entries) == once
    moved = with_block(once + "10.0.0.1 other\n", {"kind-worker1-control-plane": "127.0.0.9"})
    assert moved.count(BEGIN) == 1 and "127.0.0.9 kind-worker1-control-plane" in moved
    assert "10.0.0.1 other" in moved and "127.0.0.3" not in moved
    assert with_block(once, {}) == original


def test_ensure_entries_writes_only_when_the_block_differs(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    assert ensure_entries({"a-control-plane": "127.0.0.2"}, hosts) is True
    assert ensure_entries({"a-control-plane": "127.0.0.2"}, hosts) is False
    assert "127.0.0.2 a-control-plane" in hosts.read_text()


def _kubeconfig(server: str) -> dict[str, object]:
    return {
        "clusters": [
            {"name": "c", "cluster": {"server": server, "certificate-authority-data": "Q0E="}}
        ],
        "users": [{"name": "u", "user": {"client-certificate-data": "Y2VydA=="}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


def test_the_suite_kubeconfig_has_kind_contexts_and_workers_at_their_control_plane_names() -> None:
    named = kind_clusters("manager", ["worker-1", "worker-2"])
    merged = suite_kubeconfig(
        named,
        {
            "manager": _kubeconfig("https://127.0.0.1:30001"),
            "worker-1": _kubeconfig("https://127.0.0.1:30002"),
            "worker-2": _kubeconfig("https://127.0.0.1:30003"),
        },
    )
    assert merged["current-context"] == "kind-kind-manager"
    servers = {c["name"]: c["cluster"]["server"] for c in merged["clusters"]}
    assert servers == {
        "kind-kind-manager": "https://127.0.0.1:30001",
        "kind-kind-worker1": "https://kind-worker1-control-plane:6443",
        "kind-kind-worker2": "https://kind-worker2-control-plane:6443",
    }
    assert all(c["cluster"]["certificate-authority-data"] == "Q0E=" for c in merged["clusters"])
    contexts = {c["name"]: c["context"] for c in merged["contexts"]}
    assert contexts["kind-kind-worker1"] == {
        "cluster": "kind-kind-worker1",
        "user": "kind-kind-worker1",
    }


def test_a_kubeconfig_without_inline_ca_is_refused_naming_the_cluster() -> None:
    named = kind_clusters("manager", ["worker-1", "worker-2"])
    bare = _kubeconfig("https://127.0.0.1:1")
    bare["clusters"] = [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}]
    with pytest.raises(SuiteKubeconfigError, match=r"manager: .* certificate-authority-data"):
        suite_kubeconfig(named, {"manager": bare, "worker-1": bare, "worker-2": bare})


def test_the_multikueue_suite_runs_all_its_specs_on_a_fleet_of_its_own() -> None:
    assert suite_named("multikueue") is MULTIKUEUE
    assert MULTIKUEUE.binary in tool("conformance").binaries
    assert MULTIKUEUE.workers == 2 and MULTIKUEUE.fleet_name != suite_named("baseline").fleet_name
    options = ConformanceOptions(suite=MULTIKUEUE)
    assert options.effective_fleet_name == "conformance-multikueue"
    args = suite_arguments(options, Path("/r.xml"))
    assert not any(arg.startswith("--label-filter") for arg in args)


def test_the_config_map_holds_the_file_the_process_runs_with() -> None:
    manifest = manager_config_map_manifest("kind: Configuration\n")
    assert manifest["metadata"]["name"] == "kueue-manager-config"
    assert manifest["metadata"]["namespace"] == "kueue-system"
    assert manifest["data"] == {MANAGER_CONFIG_KEY: "kind: Configuration\n"}


def test_the_relay_carries_bytes_both_ways_between_loopback_addresses() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        connection, _ = server.accept()
        with connection:
            connection.sendall(b"echo " + connection.recv(64))

    threading.Thread(target=answer, daemon=True).start()
    relay = LoopbackRelay(Endpoint("127.0.0.5", 0), Endpoint("127.0.0.1", port))
    relay.start()
    try:
        with socket.create_connection(relay.bound_address, timeout=5) as client:
            client.sendall(b"hello")
            assert client.recv(64) == b"echo hello"
    finally:
        relay.stop()
        server.close()


def test_a_runs_files_are_kept_outside_the_fleet_directory_without_the_work_tree(
    tmp_path: Path,
) -> None:
    from devfleet.conformance import keep_results

    workdir = tmp_path / "fleet" / "conformance"
    (workdir / "tree" / "bin").mkdir(parents=True)
    (workdir / "junit-multikueue-baseline.xml").write_text("<testsuites/>")
    (workdir / "agent-worker-1.log").write_text("{}")
    kept = keep_results(workdir, tmp_path / "results" / "conformance-multikueue")
    assert sorted(p.name for p in kept.iterdir()) == [
        "agent-worker-1.log",
        "junit-multikueue-baseline.xml",
    ]


def test_the_hubs_dispatcher_is_fleetqs_unless_the_run_names_one(tmp_path: Path) -> None:
    from devfleet.conformance import hub_configuration

    upstream = {"kind": "Configuration", "integrations": {"frameworks": ["batch/job"]}}
    default, _ = hub_configuration(upstream, tmp_path, lambda _: True)
    assert "multiKueue" not in default
    named, _ = hub_configuration(
        upstream, tmp_path, lambda _: True, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    )
    assert named["multiKueue"] == {
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    }
