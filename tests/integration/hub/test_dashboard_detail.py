"""The dashboard's workload detail against a real apiserver: Events and pod logs read only
for users RBAC lets read them, the apiserver's own words when a log cannot be had, and a
priority change written to the job's label (then followed by the hub's job controller).

No kubelet runs here, so the Job's pod is created by the test on a node that does not
exist: the apiserver then refuses its log with a message, which the page must show.
"""

from __future__ import annotations

import contextlib
from typing import Any

import aiohttp
import pytest

from core.kube.errors import AlreadyExists
from core.kube.resources import JOBS, PODS, Resource
from hub.app import HubOptions
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.labels import PRIORITY_CLASS_LABEL
from tests.integration.hub.test_dashboard_rbac import READ, _account
from tests.integration.rbac_resources import SERVICE_ACCOUNTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

CORE_EVENTS = Resource("", "v1", "events", kind="Event")


async def test_detail_parts_and_priority_follow_the_users_rbac(hubs: Any, cluster: Any) -> None:
    owner = await _account(
        cluster,
        "owner",
        [
            READ,
            {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["patch"]},
        ],
    )
    reader = await _account(cluster, "reader", [READ])
    low = await cluster.priority_class("low", 10)
    high = await cluster.priority_class("high", 1000)
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("detail", flavor, "4")
    lq = await cluster.local_queue("main", cq)
    await cluster.job("train", lq, priority_class=low)
    hub = await hubs.start(
        options=HubOptions(
            health_port=-1,
            metrics_port=-1,
            dashboard_port=0,
            queue_status_interval_seconds=0.2,
            webhooks=False,
            multikueue=False,
        )
    )
    workload = await cluster.eventually(
        lambda: cluster.job_workload("train"), what="the Job's Workload", timeout=30
    )
    name = workload["metadata"]["name"]
    assert workload["spec"]["priority"] == 10
    await cluster.create(
        CORE_EVENTS,
        {
            "metadata": {"name": cluster.name("seen")},
            "involvedObject": {"kind": "Workload", "name": name, "namespace": cluster.namespace},
            "reason": "ByTest",
            "message": "an event about the Workload",
            "type": "Normal",
        },
    )
    with contextlib.suppress(AlreadyExists):  # no controller-manager makes it here
        await cluster.create(SERVICE_ACCOUNTS, {"metadata": {"name": "default"}})
    await cluster.create(
        PODS,
        {
            "metadata": {"name": "train-0", "labels": {BATCH_JOB.pod_name_labels[0]: "train"}},
            "spec": {
                "nodeName": "no-such-node",
                "automountServiceAccountToken": False,
                "containers": [{"name": "main", "image": "busybox"}],
            },
        },
    )
    base = f"http://127.0.0.1:{hub.ports['dashboard']}"
    query = f"?namespace={cluster.namespace}&name={name}"

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async with aiohttp.ClientSession() as http:

        async def get(path: str, token: str) -> tuple[int, dict[str, Any]]:
            async with http.get(base + path + query, headers=bearer(token)) as reply:
                return reply.status, dict(await reply.json())

        async def listed() -> bool:
            status, _ = await get("/api/views/workload", owner)
            return status == 200

        await cluster.eventually(listed, what="the workload in the hub's cache", timeout=30)
        status, events = await get("/api/workload/events", owner)
        assert status == 200, events
        assert "an event about the Workload" in [e["message"] for e in events["events"]]
        status, logs = await get("/api/workload/logs", owner)
        assert status == 200, logs
        [tail] = logs["tails"]
        assert (tail["pod"], tail["container"], tail["text"]) == ("train-0", "main", "")
        assert "could not read it" in tail["error"] and "no-such-node" in tail["error"]
        for part in ("events", "logs"):
            status, refused = await get(f"/api/workload/{part}", reader)
            assert status == 403 and "RBAC does not allow" in refused["error"], refused

        status, options = await get("/api/workload/priority", reader)
        assert status == 200 and options["allowed"] is False
        status, options = await get("/api/workload/priority", owner)
        assert options["allowed"] is True and options["current"] == low

        async def set_priority(token: str) -> int:
            async with http.get(base + "/api/session", headers=bearer(token)) as reply:
                csrf = (await reply.json())["csrf"]
            async with http.post(
                base + "/api/actions/set-workload-priority",
                json={"namespace": cluster.namespace, "name": name, "priorityClass": high},
                headers={**bearer(token), "Origin": base, "X-CSRF-Token": csrf},
            ) as reply:
                return reply.status

        assert await set_priority(reader) == 403
        job = await cluster.get(JOBS, "train")
        assert job["metadata"]["labels"][PRIORITY_CLASS_LABEL] == low
        assert await set_priority(owner) == 200
        job = await cluster.get(JOBS, "train")
        assert job["metadata"]["labels"][PRIORITY_CLASS_LABEL] == high

        async def reprioritised() -> dict[str, Any] | None:
            found = await cluster.job_workload("train")
            return found if found and found["spec"]["priority"] == 1000 else None

        moved = await cluster.eventually(reprioritised, what="the Workload's new priority")
        assert moved["spec"]["priorityClassRef"]["name"] == high
