"""`fleetq status` on the lite fleet: workers through their Secrets, queues from the manager."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import yaml

from cli.main import main
from tests.builders import MultiKueueCluster


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_shows_reported_capacity_and_an_unreachable_worker(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    flavor, cq, _ = scene.queues(quota="10")
    alive, dead = scene.name("alive"), scene.name("dead")
    scene.worker(alive)
    scene.worker(dead, reachable=False, active=False)
    scene.capacity_report(alive, flavor, age=timedelta(seconds=42))

    code, out, err = run(
        capsys,
        *scene.cli(
            "status", "-n", scene.namespace, "--hub-namespace", scene.hub_namespace, "-o", "json"
        ),
    )
    assert code == 0, err
    status = json.loads(out)
    workers = {worker["name"]: worker for worker in status["workers"]}
    assert workers[alive]["active"] == "True"
    assert workers[alive]["reachability"]["reachable"] is True
    assert 40 <= workers[alive]["reportAgeSeconds"] < 120
    assert workers[alive]["flavors"] == [
        {
            "flavor": flavor,
            "nodes": 3,
            "allocatable": {"cpu": "48", "nvidia.com/gpu": "8"},
            "requested": {"cpu": "12", "nvidia.com/gpu": "6"},
            "free": {"cpu": "36", "nvidia.com/gpu": "2"},
        }
    ]
    assert workers[dead]["active"] == "False"
    assert workers[dead]["reason"] == "ClientConnectionFailed"
    assert workers[dead]["reachability"]["reachable"] is False
    assert workers[dead]["reachability"]["problem"] == "unreachable"
    assert "127.0.0.1:1" in workers[dead]["reachability"]["detail"]
    queue = next(q for q in status["clusterQueues"] if q["name"] == cq)
    assert queue["usage"] == [{"flavor": flavor, "resource": "cpu", "used": "0", "quota": "10"}]
    assert [lq["name"] for lq in status["localQueues"]] == ["lq"]

    code, out, err = run(
        capsys, *scene.cli("status", "-n", scene.namespace, "--hub-namespace", scene.hub_namespace)
    )
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if f"│ {alive}" in line)
    assert "│ yes " in lines[at] and "cpu 12/48" in lines[at] and "cpu 36" in lines[at]
    assert "nvidia.com/gpu 6/8" in lines[at + 1] and "nvidia.com/gpu 2" in lines[at + 1]
    at = next(i for i, line in enumerate(lines) if f"│ {dead}" in line)
    assert "│ no " in lines[at] and "unreachable" in lines[at]
    assert "ClientConnectionFailed" in lines[at + 1]
    assert f"{dead}: hub says ClientConnectionFailed" in out
    assert f"{dead}: cannot reach the API server https://127.0.0.1:1" in out
    assert f"{cq}" in out and f"{flavor}: cpu 0/10" in out


def test_status_reports_a_kubeconfig_the_hub_would_refuse(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    name = scene.name("nosecret")
    scene.make(
        scene.fleet.manager.name,
        "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters",
        MultiKueueCluster(name).kubeconfig("missing", "Secret").obj(),
    )
    code, out, err = run(
        capsys,
        *scene.cli("status", "--hub-namespace", scene.hub_namespace, "-o", "yaml"),
    )
    assert code == 0, err
    worker = next(w for w in yaml.safe_load(out)["workers"] if w["name"] == name)
    assert worker["active"] == "Unknown"
    assert worker["reachability"]["problem"] == "BadKubeConfig"
    assert 'Secret "missing" not found' in worker["reachability"]["detail"]


def test_status_without_a_reachable_manager_fails_with_status_1(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gone",
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
                "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    code, _, err = run(capsys, "status", "--kubeconfig", str(config))
    assert code == 1
    assert "cannot reach the API server https://127.0.0.1:1" in err
    code, _, err = run(capsys, "status", "--kubeconfig", str(config), "--context", "nope")
    assert code == 2
    assert "unknown context 'nope'" in err
