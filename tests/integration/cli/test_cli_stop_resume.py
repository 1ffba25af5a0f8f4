"""`fleetq stop|resume` on queues and workloads: the spec field changes, and only once."""

from __future__ import annotations

from typing import Any

import pytest

from cli.main import main

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_stop_and_resume_a_cluster_queue(scene: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _, cq, _ = scene.queues()
    path = f"{KUEUE}/clusterqueues/{cq}"

    def policy() -> str:
        return str(scene.manager.get(path)["spec"].get("stopPolicy", "None"))

    code, out, err = run(capsys, *scene.cli("stop", "clusterqueue", cq))
    assert code == 0, err
    assert out == f"clusterqueue.kueue.x-k8s.io/{cq} stopped (stopPolicy=Hold)\n"
    assert policy() == "Hold"

    code, out, _ = run(capsys, *scene.cli("stop", "cq", cq, "--drain"))
    assert code == 0
    assert out == f"clusterqueue.kueue.x-k8s.io/{cq} stopped (stopPolicy=HoldAndDrain)\n"
    assert policy() == "HoldAndDrain"

    code, out, _ = run(capsys, *scene.cli("resume", "clusterqueue", cq))
    assert (code, policy()) == (0, "None")
    assert out == f"clusterqueue.kueue.x-k8s.io/{cq} resumed (stopPolicy=None)\n"

    code, out, _ = run(capsys, *scene.cli("resume", "clusterqueue", cq))
    assert code == 0
    assert out == f"clusterqueue.kueue.x-k8s.io/{cq} unchanged (already stopPolicy=None)\n"


def test_stop_and_resume_a_local_queue_and_a_workload(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    scene.queues()
    scene.workload("w")
    lq_path = f"{KUEUE}/namespaces/{scene.namespace}/localqueues/lq"
    wl_path = f"{KUEUE}/namespaces/{scene.namespace}/workloads/w"

    code, _, err = run(capsys, *scene.cli("stop", "localqueue", "lq", "-n", scene.namespace))
    assert code == 0, err
    assert scene.manager.get(lq_path)["spec"]["stopPolicy"] == "Hold"
    code, _, _ = run(capsys, *scene.cli("resume", "lq", "lq", "-n", scene.namespace))
    assert scene.manager.get(lq_path)["spec"]["stopPolicy"] == "None"

    code, out, err = run(capsys, *scene.cli("stop", "workload", "w", "-n", scene.namespace))
    assert code == 0, err
    assert out == "workload.kueue.x-k8s.io/w stopped (active=false)\n"
    assert scene.manager.get(wl_path)["spec"]["active"] is False
    code, out, _ = run(capsys, *scene.cli("resume", "workload", "w", "-n", scene.namespace))
    assert out == "workload.kueue.x-k8s.io/w resumed (active=true)\n"
    assert scene.manager.get(wl_path)["spec"]["active"] is True


def test_stop_unknown_objects_fails_with_status_1(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *scene.cli("stop", "clusterqueue", scene.name("nope")))
    assert (code, out) == (1, "")
    assert f'clusterqueue "{scene.name("nope")}" not found' in err
    code, _, err = run(capsys, *scene.cli("resume", "workload", "nope", "-n", scene.namespace))
    assert code == 1
    assert f'workload "nope" not found in namespace "{scene.namespace}"' in err
    with pytest.raises(SystemExit) as exited:
        main(scene.cli("stop", "workload", "w", "--drain"))
    assert exited.value.code == 2
