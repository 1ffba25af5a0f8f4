"""`fleetq dev up/status/down` against real control planes: refusal, status, clean teardown."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from kubernetes import client

from devfleet.cluster_access import RunningFleet
from devfleet.fleet import Fleet, FleetError
from devfleet.fleet_spec import load_fleet_spec


def _listening(server: str) -> bool:
    url = urlparse(server)
    try:
        with socket.create_connection((url.hostname, url.port), timeout=0.5):
            return True
    except OSError:
        return False


def test_every_cluster_answers_with_its_own_kubeconfig(lite_fleet: RunningFleet) -> None:
    versions = set()
    for member in lite_fleet.all:
        kubeconfig = member.kubeconfig.read_text()
        assert "certificate-authority-data" in kubeconfig  # inline, no file references
        with member.api_client() as api_client:
            versions.add(client.VersionApi(api_client).get_code().git_version)
    assert versions == {"v1.36.3"}
    assert len({m.server for m in lite_fleet.all}) == 3


def test_a_second_up_of_a_running_fleet_is_refused(lite_fleet: RunningFleet) -> None:
    if os.environ.get("FLEETQ_TEST_FLEET"):
        pytest.skip("reusing an external fleet: not ours to poke")
    with pytest.raises(FleetError, match="already running"):
        Fleet(lite_fleet.name).up(load_fleet_spec(), lite=True, progress=lambda _: None)
    assert all(_listening(m.server) for m in lite_fleet.all)


def test_status_command_reports_the_running_fleet(lite_fleet: RunningFleet) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "dev", "status", "--name", lite_fleet.name],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for member in lite_fleet.all:
        assert member.name in done.stdout


def test_down_leaves_no_process_port_or_state_behind(tmp_path: Path) -> None:
    fleet = Fleet(f"lifecycle-{os.getpid()}", home=tmp_path)
    running = fleet.up(load_fleet_spec().with_worker_count(0), lite=True, progress=lambda _: None)
    assert _listening(running.manager.server)
    leftovers = fleet.down(progress=lambda _: None)
    assert leftovers == []
    assert not _listening(running.manager.server)
    assert not fleet.dir.exists()
    marker = str(fleet.dir)
    survivors = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline:
                survivors.append(cmdline)
    assert survivors == []
