"""`fleetq logs JOB`: from the manager's Workload to the worker's pods, through its apiserver.

The "worker" is a fleet member reached through a kubeconfig Secret as the hub reaches it:
the manager's own apiserver, the one member where no kwok or scheduler ever touches the
Nodes and Pods the test writes. Its pods sit on a Node whose kubelet endpoint is the test's
fake kubelet, so the apiserver really proxies `pods/log` there and the CLI prints what came
back.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from cli.main import main
from tests.builders import owner_reference


@pytest.fixture(autouse=True)
def _pods_stay_as_written(scene: Any) -> None:
    scene.worker_member = scene.fleet.manager.name


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def dispatched_job(scene: Any, worker: str, job: str = "train") -> None:
    """A Job on the manager whose Workload the hub (played here) dispatched to `worker`."""
    created = scene.job(job)
    owner = owner_reference("batch/v1", "Job", job, created["metadata"]["uid"])
    now = datetime.now(UTC)
    scene.workload(
        f"job-{job}-x1",
        owner=owner,
        status={
            "conditions": [
                scene.condition("QuotaReserved", "True", "QuotaReserved", "reserved", now),
                scene.condition("Admitted", "True", "Admitted", "admitted", now),
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "flavors": {"cpu": "rf"}, "count": 1}],
            },
            "clusterName": worker,
        },
    )


def worker_node(scene: Any, kubelet_port: int) -> str:
    """A Node on worker 1 whose kubelet is the fake one; also the namespace's ServiceAccount."""
    rest = scene.rest[scene.worker_cluster]
    node = scene.name("node")
    scene.make(
        scene.worker_cluster,
        "/api/v1/nodes",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
    )
    rest.apply(
        f"/api/v1/nodes/{node}",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "status": {
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            },
        },
        subresource="status",
    )
    try:
        rest.request(
            "POST",
            f"/api/v1/namespaces/{scene.namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        )
    except rest.Error as error:
        if error.status != 409:
            raise
    return node


def job_pod(scene: Any, name: str, job: str, node: str | None, containers: list[str]) -> None:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "containers": [{"name": c, "image": "busybox"} for c in containers],
    }
    if node:
        spec["nodeName"] = node
    scene.rest[scene.worker_cluster].request(
        "POST",
        f"/api/v1/namespaces/{scene.namespace}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {"batch.kubernetes.io/job-name": job},
            },
            "spec": spec,
        },
    )


def test_logs_of_every_pod_come_from_the_worker(
    scene: Any, fake_kubelet: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = scene.name("w1")
    scene.worker(worker)
    dispatched_job(scene, worker)
    node = worker_node(scene, fake_kubelet.port)
    job_pod(scene, "train-a", "train", node, ["main"])
    job_pod(scene, "train-b", "train", node, ["main", "sidecar"])
    job_pod(scene, "other", "not-train", node, ["main"])
    ns = scene.namespace
    fake_kubelet.logs[(ns, "train-a", "main")] = ["step 1 loss=0.9", "step 2 loss=0.5"]
    fake_kubelet.logs[(ns, "train-b", "main")] = ["worker b ready"]
    fake_kubelet.logs[(ns, "train-b", "sidecar")] = ["sidecar up"]

    base = ("logs", "train", "-n", ns, "--hub-namespace", scene.hub_namespace)
    code, out, err = run(capsys, *scene.cli(*base))
    assert code == 0, err
    assert out.splitlines() == [
        "[train-a] step 1 loss=0.9",
        "[train-a] step 2 loss=0.5",
        "[train-b/main] worker b ready",
        "[train-b/sidecar] sidecar up",
    ]
    assert all(path.startswith(f"/containerLogs/{ns}/train-") for path in fake_kubelet.requests)

    code, out, err = run(capsys, *scene.cli(*base, "-f", "-c", "main"))
    assert code == 0, err
    assert sorted(out.splitlines()) == [
        "[train-a] step 1 loss=0.9",
        "[train-a] step 2 loss=0.5",
        "[train-b] worker b ready",
    ]
    assert any("follow=true" in path for path in fake_kubelet.requests)


def test_logs_report_unscheduled_pods_and_the_apiservers_refusals(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = scene.name("w1")
    scene.worker(worker)
    dispatched_job(scene, worker)
    worker_node(scene, kubelet_port=1)
    job_pod(scene, "train-a", "train", None, ["main"])
    job_pod(scene, "train-b", "train", "ghost-node", ["main"])
    base = ("logs", "train", "-n", scene.namespace, "--hub-namespace", scene.hub_namespace)
    code, out, err = run(capsys, *scene.cli(*base))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert "[train-a] no logs yet: the pod is not on a node (not scheduled)" in lines
    # The apiserver looks the pod's node up before proxying; its own words come through.
    assert '[train-b] cannot read logs: HTTP 404 NotFound: pods "ghost-node" not found' in lines

    code, out, err = run(capsys, *scene.cli(*base, "-c", "nope"))
    assert code == 1
    assert "no pod of job train on worker" in err and "has a container nope" in err


def test_logs_of_a_job_not_yet_dispatched_or_on_an_unreachable_worker(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    scene.queues()
    created = scene.job("waiting")
    scene.workload(
        "job-waiting-x1",
        owner=owner_reference("batch/v1", "Job", "waiting", created["metadata"]["uid"]),
        status={
            "conditions": [
                scene.condition(
                    "QuotaReserved", "False", "Pending", "insufficient quota", datetime.now(UTC)
                )
            ]
        },
    )
    hub = ("--hub-namespace", scene.hub_namespace, "-n", scene.namespace)
    code, _, err = run(capsys, *scene.cli("logs", "waiting", *hub))
    assert code == 1
    assert "job waiting does not run on a worker yet" in err
    assert "is pending: insufficient quota" in err

    dead = scene.name("dead")
    scene.worker(dead, reachable=False, active=False)
    dispatched_job(scene, dead, job="lost")
    code, _, err = run(capsys, *scene.cli("logs", "lost", *hub))
    assert code == 1
    assert f"{dead}: cannot reach the API server https://127.0.0.1:1" in err

    code, _, err = run(capsys, *scene.cli("logs", "nope", *hub))
    assert code == 1
    assert 'workload "nope" not found' in err


def test_logs_and_status_explain_a_worker_identity_without_permissions(
    scene: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = scene.name("weak")
    scene.worker(worker, powerless=True)
    dispatched_job(scene, worker)
    hub = ("--hub-namespace", scene.hub_namespace, "-n", scene.namespace)
    code, _, err = run(capsys, *scene.cli("logs", "train", *hub))
    assert code == 1
    assert "(HTTP 403 Forbidden)" in err
    assert "must allow get/list on pods and get on pods/log" in err

    code, out, err = run(capsys, *scene.cli("status", *hub, "-o", "json"))
    assert code == 0, err
    row = next(w for w in json.loads(out)["workers"] if w["name"] == worker)
    assert row["reachability"]["problem"] == "HTTP 403"
    assert "workercapacities" in row["reachability"]["detail"]
