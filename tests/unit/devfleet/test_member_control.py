"""Member control reads kwokctl's record of a cluster and never signals a stranger."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from devfleet.fleet import Fleet
from devfleet.member_control import (
    APISERVER,
    MemberControl,
    MemberControlError,
    component_launch,
)


def kwok_config(directory: Path) -> Path:
    """A cluster record shaped like the one kwokctl's binary runtime writes."""
    configuration = {
        "kind": "KwokctlConfiguration",
        "components": [
            {"name": "etcd", "binary": "/bin/etcd", "args": ["--name=node0"]},
            {
                "name": APISERVER,
                "binary": str(directory / "bin" / APISERVER),
                "args": ["--secure-port=6443", "--bind-address=127.0.0.1"],
                "workDir": str(directory),
            },
        ],
    }
    stage = {"kind": "Stage", "metadata": {"name": "pod-ready"}}
    path = directory / "kwok.yaml"
    path.write_text(yaml.safe_dump_all([configuration, stage]))
    return path


def fleet_with_one_cluster(home: Path) -> tuple[Fleet, Path]:
    fleet = Fleet("unit", home=home)
    cluster_dir = fleet.kwokctl.workdir / "clusters" / fleet.kwok_cluster_name("worker-1")
    (cluster_dir / "pids").mkdir(parents=True)
    kwok_config(cluster_dir)
    fleet.record_path.write_text(
        json.dumps(
            {
                "name": "unit",
                "lite": True,
                "clusters": {"worker-1": fleet.kwok_cluster_name("worker-1")},
                "kubeconfigs": {"worker-1": str(home / "worker-1.kubeconfig")},
                "servers": {"worker-1": "https://127.0.0.1:1"},
                "started_at": 0.0,
                "ready_seconds": 0.0,
            }
        )
    )
    return fleet, cluster_dir


def test_the_launch_is_read_from_the_cluster_record(tmp_path: Path) -> None:
    launch = component_launch(kwok_config(tmp_path), APISERVER)
    assert launch.command == [
        str(tmp_path / "bin" / APISERVER),
        "--secure-port=6443",
        "--bind-address=127.0.0.1",
    ]
    assert launch.work_dir == tmp_path
    with pytest.raises(MemberControlError, match="no component 'kwok-controller'"):
        component_launch(tmp_path / "kwok.yaml", "kwok-controller")


def test_a_member_of_a_fleet_that_is_not_up_cannot_be_controlled(tmp_path: Path) -> None:
    with pytest.raises(MemberControlError, match="is not up"):
        MemberControl(Fleet("absent", home=tmp_path), "worker-1")
    fleet, _ = fleet_with_one_cluster(tmp_path)
    with pytest.raises(MemberControlError, match="no cluster 'worker-9'"):
        MemberControl(fleet, "worker-9")


def test_a_pid_file_naming_another_program_is_never_signalled(tmp_path: Path) -> None:
    fleet, cluster_dir = fleet_with_one_cluster(tmp_path)
    control = MemberControl(fleet, "worker-1")
    assert control.apiserver_pid() is None  # no pid file yet
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (cluster_dir / "pids" / f"{APISERVER}.pid").write_text(str(stranger.pid))
        assert control.apiserver_pid() is None  # a recycled pid: not an apiserver
        with pytest.raises(MemberControlError, match="not running"):
            control.kill_apiserver()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_the_recorded_apiserver_is_found_and_killed(tmp_path: Path) -> None:
    fleet, cluster_dir = fleet_with_one_cluster(tmp_path)
    program = str(cluster_dir / "bin" / APISERVER)
    # A stand-in whose command line names the recorded binary (`exec -a` keeps the pid).
    fake = subprocess.Popen(["bash", "-c", f"exec -a {program} sleep 30"])
    try:
        (cluster_dir / "pids" / f"{APISERVER}.pid").write_text(str(fake.pid))
        control = MemberControl(fleet, "worker-1")
        deadline = time.monotonic() + 5
        while control.apiserver_pid() != fake.pid and time.monotonic() < deadline:
            time.sleep(0.05)  # until bash has exec'd
        assert control.apiserver_pid() == fake.pid
        control.kill_apiserver(timeout=5)  # its "port" (127.0.0.1:1) is closed already
        assert fake.poll() is not None  # gone (and reaped by kill_apiserver: no zombie)
        assert control.apiserver_pid() is None
    finally:
        if fake.poll() is None:
            fake.kill()
            fake.wait()
