"""`fleetq list workloads` and `describe workload` on workloads whose statuses the test wrote."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cli.main import main
from tests.builders import LocalQueue, owner_reference


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pending_status(scene: Any, message: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"conditions": [scene.condition("QuotaReserved", "False", "Pending", message, now)]}


def admitted_status(scene: Any, flavor: str, cq: str, worker: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "conditions": [
            scene.condition(
                "QuotaReserved",
                "True",
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {cq}",
                now,
            ),
            scene.condition("Admitted", "True", "Admitted", "The workload is admitted", now),
        ],
        "admission": {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": flavor},
                    "resourceUsage": {"cpu": "1"},
                    "count": 1,
                }
            ],
        },
        "admissionChecks": [
            {
                "name": "multikueue",
                "state": "Ready",
                "message": f'The workload got reservation on "{worker}"',
                "lastTransitionTime": scene.stamp(now),
            }
        ],
        "clusterName": worker,
    }


@pytest.fixture
def queued(scene: Any) -> dict[str, str]:
    """Two LocalQueues on one ClusterQueue and workloads in every state."""
    flavor, cq, lq = scene.queues()
    scene.make(
        scene.fleet.manager.name,
        f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{scene.namespace}/localqueues",
        LocalQueue("lq2", scene.namespace).cluster_queue(cq).obj(),
    )
    later = datetime.now(UTC) + timedelta(hours=1)
    # Created first, but evicted by an admission check: it queues by the eviction time.
    scene.workload(
        "ev",
        status={
            "conditions": [
                scene.condition("QuotaReserved", "False", "Pending", "requeued", later),
                scene.condition("Evicted", "True", "AdmissionCheck", "check went to Retry", later),
            ]
        },
    )
    scene.workload("p-low", priority=0, status=pending_status(scene, "insufficient quota"))
    scene.workload("p-high", priority=10, status=pending_status(scene, "insufficient quota"))
    scene.workload("p-other", queue="lq2", priority=5, status=pending_status(scene, "waiting"))
    scene.workload("adm", status=admitted_status(scene, flavor, cq, "worker-x"))
    scene.workload("off", active=False)
    scene.workload(
        "fin",
        status={
            "conditions": [
                scene.condition(
                    "Finished", "True", "Succeeded", "Job finished successfully", datetime.now(UTC)
                )
            ]
        },
    )
    return {"flavor": flavor, "cq": cq, "lq": lq}


def test_list_shows_status_positions_in_engine_order_and_worker(
    scene: Any, queued: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, *scene.cli("list", "workloads", "-n", scene.namespace, "-o", "json")
    )
    assert code == 0, err
    listing = json.loads(out)
    rows = {row["name"]: row for row in listing["items"]}
    assert listing["positionSource"] == "computed"  # no hub serves the visibility API here
    assert {name: rows[name]["status"] for name in rows} == {
        "ev": "evicted",
        "p-low": "pending",
        "p-high": "pending",
        "p-other": "pending",
        "adm": "admitted",
        "off": "inactive",
        "fin": "finished",
    }
    positions = {
        name: (rows[name]["positionInClusterQueue"], rows[name]["positionInLocalQueue"])
        for name in rows
    }
    assert positions == {
        "p-high": (0, 0),
        "p-other": (1, 0),
        "p-low": (2, 1),
        "ev": (3, 2),
        "adm": (None, None),
        "off": (None, None),
        "fin": (None, None),
    }
    assert rows["adm"]["worker"] == "worker-x"
    assert all(row["clusterQueue"] == queued["cq"] for row in listing["items"])

    code, out, err = run(capsys, *scene.cli("list", "workloads", "-n", scene.namespace))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "LOCALQUEUE",
        "CLUSTERQUEUE",
        "STATUS",
        "POSITION",
        "PRIORITY",
        "WORKER",
        "AGE",
    ]
    high = next(line for line in lines if line.startswith("p-high"))
    assert high.split()[:6] == ["p-high", "lq", queued["cq"], "pending", "0", "(lq"]
    assert next(line for line in lines if line.startswith("adm")).split()[6] == "worker-x"
    assert "positions: computed from the Workloads in the engine's order" in out


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--status", "pending"], {"p-low", "p-high", "p-other"}),
        (["--status", "evicted"], {"ev"}),
        (["--status", "admitted"], {"adm"}),
        (["--cluster", "worker-x"], {"adm"}),
        (["--localqueue", "lq2"], {"p-other"}),
    ],
)
def test_list_filters(
    scene: Any,
    queued: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: set[str],
) -> None:
    code, out, err = run(
        capsys, *scene.cli("list", "workloads", "-n", scene.namespace, "-o", "json", *flags)
    )
    assert code == 0, err
    assert {row["name"] for row in json.loads(out)["items"]} == expected


def test_list_of_another_queue_finds_nothing(
    scene: Any, queued: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, *scene.cli("list", "workloads", "-n", scene.namespace, "--cq", "no-such-queue")
    )
    assert (code, out) == (0, "")
    assert f"No workloads found in namespace {scene.namespace}." in err
    with pytest.raises(SystemExit) as exited:
        main(scene.cli("list", "workloads", "--status", "bogus"))
    assert exited.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_describe_tells_why_a_workload_waits_and_finds_it_by_job_name(
    scene: Any, queued: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    job = scene.job("train")
    owner = owner_reference("batch/v1", "Job", "train", job["metadata"]["uid"])
    why = (
        "couldn't assign flavors to pod set main: "
        f"insufficient quota for cpu in flavor {queued['flavor']}"
    )
    scene.workload("job-train-1a2b3", priority=20, owner=owner, status=pending_status(scene, why))
    scene.event("Workload", "job-train-1a2b3", "Pending", why)

    code, out, err = run(
        capsys, *scene.cli("describe", "workload", "train", "-n", scene.namespace, "-o", "json")
    )
    assert code == 0, err
    story = json.loads(out)
    assert story["name"] == "job-train-1a2b3"
    assert story["status"] == "pending"
    assert story["pendingReason"] == why
    assert story["position"] == {"clusterQueue": 0, "localQueue": 0, "source": "computed"}
    assert story["job"] == {
        "kind": "Job",
        "name": "train",
        "found": True,
        "suspended": True,
        "active": 0,
        "succeeded": 0,
        "failed": 0,
    }
    assert [step["step"] for step in story["steps"]] == ["Created", "Queued"]
    assert story["events"][-1]["reason"] == "Pending"

    code, out, err = run(capsys, *scene.cli("describe", "workload", "train", "-n", scene.namespace))
    assert code == 0, err
    assert f"Pending because:  {why}" in out
    assert "0 in ClusterQueue, 0 in LocalQueue" in out
    assert "Job train: suspended" in out


def test_describe_tells_an_admitted_dispatched_story(
    scene: Any, queued: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, *scene.cli("describe", "workload", "adm", "-n", scene.namespace, "-o", "yaml")
    )
    assert code == 0, err
    import yaml

    story = yaml.safe_load(out)
    steps = {step["step"]: step["detail"] for step in story["steps"]}
    assert (
        steps["QuotaReserved"]
        == f"in ClusterQueue {queued['cq']}; flavors main: cpu={queued['flavor']}"
    )
    assert steps["Check multikueue"] == 'Ready: The workload got reservation on "worker-x"'
    assert steps["Dispatched"] == "to worker worker-x"
    assert story["worker"] == "worker-x" and story["position"] is None

    code, out, _ = run(capsys, *scene.cli("describe", "workload", "fin", "-n", scene.namespace))
    assert code == 0
    assert "Finished" in out and "Succeeded: Job finished successfully" in out


def test_describe_unknown_workload_fails_with_status_1(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *scene.cli("describe", "workload", "nope", "-n", scene.namespace))
    assert (code, out) == (1, "")
    assert f'workload "nope" not found in namespace "{scene.namespace}"' in err
