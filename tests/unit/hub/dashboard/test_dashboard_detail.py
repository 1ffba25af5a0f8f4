"""The workload detail's on-demand parts and the priority action, each behind its own RBAC,
and the history view (its worker latencies only for users who may see the workers)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from cli.ops.workload_story import EventView
from hub.dashboard.history import FleetHistory, HistorySampler, Sample
from hub.dashboard.priority_change import PriorityNotChangeable, priority_target
from hub.dashboard.server import Dashboard
from hub.dashboard.views import decoded_workload
from hub.dashboard.workload_reads import LogTail
from tests.unit.hub.dashboard.doubles import (
    NOW,
    CannedReads,
    GrantsAuth,
    ListSource,
    RecordedActions,
    workload,
)

OWNER, VIEWER, PATCHER = "owner-token", "viewer-token", "patcher-token"
JOB = ("batch/v1", "Job", "train")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def source() -> ListSource:
    return ListSource(
        cqs=[{"metadata": {"name": "cq"}, "spec": {}, "status": {"pendingWorkloads": 2}}],
        wls=[
            workload("team", "train-wl", priority_class="low", owner=JOB),
            workload("team", "bare", priority_class="low"),
            workload("team", "no-class"),
        ],
        priority_classes={"low": 10, "high": 1000},
    )


@pytest.fixture
def auth() -> GrantsAuth:
    read = {("get", "workloads"), ("list", "clusterqueues")}
    return GrantsAuth(
        tokens={OWNER: "owner", VIEWER: "viewer", PATCHER: "patcher"},
        grants={
            *(("owner", verb, res, "team") for verb, res in read),
            ("owner", "list", "clusterqueues", "*"),
            ("owner", "list", "multikueueclusters", "*"),
            ("owner", "list", "events", "team"),
            ("owner", "get", "pods/log", "team"),
            ("owner", "patch", "jobs", "team"),
            *(("viewer", verb, res, "*") for verb, res in read),
            ("patcher", "get", "workloads", "team"),
            ("patcher", "patch", "workloads", "team"),
        },
    )


@pytest.fixture
def reads() -> CannedReads:
    return CannedReads(
        event_list=[
            EventView(
                time="t", type="Normal", reason="Started", object="job/train", message="pods up"
            )
        ],
        tails=[
            LogTail(
                pod="train-0",
                container="main",
                cluster="w1",
                error="the apiserver could not read it: HTTP 500: no kubelet",
            )
        ],
    )


@pytest.fixture
def actions() -> RecordedActions:
    return RecordedActions()


@pytest_asyncio.fixture(loop_scope="function")
async def client(
    source: ListSource, auth: GrantsAuth, actions: RecordedActions, reads: CannedReads
) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    history = FleetHistory(capacity=10)
    history.record(Sample(at=1.0, queues={"cq": (2, 0)}, latency={"w1": 0.25}))
    sampler = HistorySampler(history, source.cluster_queues, None)
    dashboard = Dashboard(
        source, auth, actions, reads=reads, sampler=sampler, push_seconds=0.02, now=lambda: NOW
    )
    async with TestClient(TestServer(dashboard.app())) as client:
        yield client


def part(name: str, workload_name: str = "train-wl") -> str:
    return f"/api/workload/{name}?namespace=team&name={workload_name}"


async def test_events_and_logs_are_read_only_for_users_rbac_lets_read_them(
    client: TestClient,  # type: ignore[type-arg]
    reads: CannedReads,
) -> None:
    events = await client.get(part("events"), headers=bearer(OWNER))
    assert events.status == 200
    assert (await events.json())["events"][0]["message"] == "pods up"
    assert reads.asked == [("events", "team", "Workload/train-wl", "Job/train")]
    logs = await (await client.get(part("logs"), headers=bearer(OWNER))).json()
    assert logs["tails"][0]["error"].endswith("no kubelet")  # the apiserver's words, shown
    refused = await client.get(part("events"), headers=bearer(VIEWER))
    assert refused.status == 403
    message = (await refused.json())["error"]
    assert "may not see this workload's events" in message and "list events" in message
    refused_logs = await client.get(part("logs"), headers=bearer(VIEWER))
    assert refused_logs.status == 403 and "get pods/log" in (await refused_logs.json())["error"]
    nobody = await client.get(part("events"), headers=bearer(PATCHER))
    assert nobody.status == 403
    assert len(reads.asked) == 2  # nothing read for a refused user
    missing = await client.get(part("events", "gone"), headers=bearer(OWNER))
    assert missing.status == 404


async def test_the_priority_is_written_on_the_job_label_for_a_user_who_may_patch_the_job(
    client: TestClient,  # type: ignore[type-arg]
    actions: RecordedActions,
) -> None:
    options = await (await client.get(part("priority"), headers=bearer(OWNER))).json()
    assert options["allowed"] and options["current"] == "low"
    assert [c["name"] for c in options["classes"]] == ["high", "low"]
    assert "Job train" in options["writes"]
    own = f"http://{client.host}:{client.port}"
    csrf = (await (await client.get("/api/session", headers=bearer(OWNER))).json())["csrf"]
    path = "/api/actions/set-workload-priority"
    body = {"namespace": "team", "name": "train-wl", "priorityClass": "high"}
    without_csrf = await client.post(path, json=body, headers={**bearer(OWNER), "Origin": own})
    assert without_csrf.status == 403 and "CSRF" in (await without_csrf.json())["error"]
    foreign = await client.post(
        path,
        json=body,
        headers={**bearer(OWNER), "Origin": "https://evil.example", "X-CSRF-Token": csrf},
    )
    assert foreign.status == 403
    assert actions.done == []
    done = await client.post(
        path, json=body, headers={**bearer(OWNER), "Origin": own, "X-CSRF-Token": csrf}
    )
    assert done.status == 200, await done.text()
    assert actions.done == [("priority", "Job", "team", "train", "high", "1000")]
    unknown = await client.post(
        path,
        json={**body, "priorityClass": "urgent"},
        headers={**bearer(OWNER), "Origin": own, "X-CSRF-Token": csrf},
    )
    assert (
        unknown.status == 400
        and "no WorkloadPriorityClass 'urgent'" in (await unknown.json())["error"]
    )


async def test_the_priority_action_is_refused_without_patch_on_the_object_written(
    client: TestClient,  # type: ignore[type-arg]
    actions: RecordedActions,
) -> None:
    own = f"http://{client.host}:{client.port}"
    csrf = (await (await client.get("/api/session", headers=bearer(PATCHER))).json())["csrf"]
    headers = {**bearer(PATCHER), "Origin": own, "X-CSRF-Token": csrf}
    path = "/api/actions/set-workload-priority"
    options = await (await client.get(part("priority"), headers=bearer(PATCHER))).json()
    assert not options["allowed"] and "patch jobs.batch" in options["reason"]
    on_job = await client.post(
        path,
        json={"namespace": "team", "name": "train-wl", "priorityClass": "high"},
        headers=headers,
    )
    assert on_job.status == 403 and "patch jobs.batch" in (await on_job.json())["error"]
    assert actions.done == []
    bare = await client.post(
        path,
        json={"namespace": "team", "name": "bare", "priorityClass": "high"},
        headers=headers,
    )
    assert bare.status == 200  # no job: the Workload itself, which this user may patch
    assert actions.done == [("priority", "Workload", "team", "bare", "high", "1000")]
    no_class = await client.post(
        path,
        json={"namespace": "team", "name": "no-class", "priorityClass": "high"},
        headers=headers,
    )
    assert (
        no_class.status == 409
        and "only a WorkloadPriorityClass" in (await no_class.json())["error"]
    )


def test_a_pod_priority_class_cannot_be_changed_from_the_page() -> None:
    raw = workload("team", "pod-class")
    raw["spec"]["priorityClassRef"] = {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "system",
    }
    with pytest.raises(PriorityNotChangeable, match="pod PriorityClass system"):
        priority_target(decoded_workload(raw))
    target = priority_target(
        decoded_workload(workload("team", "w", priority_class="low", owner=JOB))
    )
    assert (target.group, target.plural, target.name, target.on_job) == (
        "batch",
        "jobs",
        "train",
        True,
    )


async def test_the_history_view_hides_worker_latency_from_users_who_may_not_see_workers(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    owner = await (await client.get("/api/views/history", headers=bearer(OWNER))).json()
    # The recorded sample, then the one the server took when it started (no dispatch since).
    assert owner["dispatchLatency"] == [{"worker": "w1", "seconds": [0.25, None]}]
    assert owner["clusterQueues"][0]["pending"] == [2, 2]
    viewer = await client.get("/api/views/history", headers=bearer(VIEWER))
    assert viewer.status == 200
    body = await viewer.json()
    assert body["dispatchLatency"] == [] and "multikueueclusters" in body["latencyHidden"]
    assert (await client.get("/api/views/history", headers=bearer(PATCHER))).status == 403
