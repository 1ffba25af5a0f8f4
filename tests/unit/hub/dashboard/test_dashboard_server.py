"""The dashboard's HTTP surface: who sees what, who may act, and the live streams' limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from hub.dashboard.server import Dashboard
from hub.dashboard.streams import StreamLimiter
from tests.unit.hub.dashboard.doubles import (
    NOW,
    GrantsAuth,
    ListSource,
    RecordedActions,
    condition,
    workload,
)

ADMIN, TEAM, NOBODY = "admin-token", "team-token", "nobody-token"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def source() -> ListSource:
    return ListSource(
        cqs=[{"metadata": {"name": "cq"}, "spec": {"cohortName": "org"}, "status": {}}],
        wls=[workload("team-a", "mine"), workload("team-b", "theirs")],
    )


@pytest.fixture
def auth() -> GrantsAuth:
    return GrantsAuth(
        tokens={ADMIN: "admin", TEAM: "team-a-user", NOBODY: "nobody"},
        grants={
            *(("admin", "list", r, "*") for r in ("clusterqueues", "workloads", "resourceflavors")),
            ("admin", "list", "multikueueclusters", "*"),
            ("admin", "get", "workloads", "*"),
            ("admin", "patch", "clusterqueues", "*"),
            ("admin", "patch", "workloads", "*"),
            ("team-a-user", "list", "workloads", "team-a"),
        },
    )


@pytest.fixture
def actions() -> RecordedActions:
    return RecordedActions()


@pytest_asyncio.fixture(loop_scope="function")
async def client(
    source: ListSource, auth: GrantsAuth, actions: RecordedActions
) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    dashboard = Dashboard(
        source,
        auth,
        actions,
        limiter=StreamLimiter(per_user=2),
        push_seconds=0.02,
        recheck_seconds=0.1,
        now=lambda: NOW,
    )
    async with TestClient(TestServer(dashboard.app())) as client:
        yield client


async def test_the_page_is_open_but_holds_no_data(client: TestClient) -> None:  # type: ignore[type-arg]
    page = await client.get("/")
    assert page.status == 200
    assert "fleetq dashboard" in await page.text()
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert (await client.get("/static/app.js")).status == 200
    assert (await client.get("/static/..%2Fserver.py")).status == 404
    assert (await client.get("/api/views/queues")).status == 401
    refused = await client.get("/api/views/queues", headers=bearer("forged"))
    assert refused.status == 401


async def test_a_token_in_the_url_is_refused(client: TestClient) -> None:  # type: ignore[type-arg]
    answer = await client.get(f"/api/views/queues?token={ADMIN}")
    assert answer.status == 400
    assert "Authorization header" in (await answer.json())["error"]


async def test_each_view_is_authorized_against_the_objects_it_shows(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    queues = await client.get("/api/views/queues", headers=bearer(ADMIN))
    assert queues.status == 200
    assert [q["name"] for q in (await queues.json())["clusterQueues"]] == ["cq"]
    assert queues.headers["Cache-Control"] == "no-store"
    refused = await client.get("/api/views/queues", headers=bearer(TEAM))
    assert refused.status == 403
    assert "may not see the queues view" in (await refused.json())["error"]
    everywhere = await client.get("/api/views/workloads", headers=bearer(TEAM))
    assert everywhere.status == 403
    own = await client.get("/api/views/workloads?namespace=team-a", headers=bearer(TEAM))
    assert own.status == 200
    assert [r["name"] for r in (await own.json())["rows"]] == ["mine"]
    other = await client.get("/api/views/workloads?namespace=team-b", headers=bearer(TEAM))
    assert other.status == 403
    for view in ("fleet", "flavors"):
        assert (await client.get(f"/api/views/{view}", headers=bearer(NOBODY))).status == 403


async def test_the_session_says_which_actions_rbac_allows(client: TestClient) -> None:  # type: ignore[type-arg]
    admin = await (await client.get("/api/session", headers=bearer(ADMIN))).json()
    assert admin["user"] == "admin" and all(admin["can"].values())
    team = await (await client.get("/api/session", headers=bearer(TEAM))).json()
    assert not any(team["can"].values())
    assert team["csrf"] != admin["csrf"]


async def test_actions_need_the_own_origin_the_csrf_token_and_patch_rights(
    client: TestClient,  # type: ignore[type-arg]
    actions: RecordedActions,
) -> None:
    own = f"http://{client.host}:{client.port}"
    csrf = (await (await client.get("/api/session", headers=bearer(ADMIN))).json())["csrf"]
    body = {"name": "cq"}
    path = "/api/actions/stop-cluster-queue"
    no_origin = await client.post(path, json=body, headers={**bearer(ADMIN), "X-CSRF-Token": csrf})
    assert no_origin.status == 403
    foreign = await client.post(
        path,
        json=body,
        headers={**bearer(ADMIN), "X-CSRF-Token": csrf, "Origin": "https://evil.example"},
    )
    assert foreign.status == 403
    no_token = await client.post(path, json=body, headers={**bearer(ADMIN), "Origin": own})
    assert no_token.status == 403 and "CSRF" in (await no_token.json())["error"]
    team_csrf = (await (await client.get("/api/session", headers=bearer(TEAM))).json())["csrf"]
    stolen = await client.post(
        path, json=body, headers={**bearer(ADMIN), "Origin": own, "X-CSRF-Token": team_csrf}
    )
    assert stolen.status == 403
    not_allowed = await client.post(
        path, json=body, headers={**bearer(TEAM), "Origin": own, "X-CSRF-Token": team_csrf}
    )
    assert not_allowed.status == 403 and "may not patch" in (await not_allowed.json())["error"]
    assert actions.done == []
    done = await client.post(
        path, json=body, headers={**bearer(ADMIN), "Origin": own, "X-CSRF-Token": csrf}
    )
    assert done.status == 200
    deactivated = await client.post(
        "/api/actions/deactivate-workload",
        json={"namespace": "team-a", "name": "mine"},
        headers={**bearer(ADMIN), "Origin": own, "X-CSRF-Token": csrf},
    )
    assert deactivated.status == 200
    assert actions.done == [("stop", "cq"), ("deactivate", "team-a", "mine")]


async def _events(response: object, count: int) -> list[tuple[str, str]]:
    """Read `count` server-sent events (name, data) from a streaming response."""
    content = response.content  # type: ignore[attr-defined]
    events: list[tuple[str, str]] = []
    name, data = "message", ""
    while len(events) < count:
        line = (await asyncio.wait_for(content.readline(), 5)).decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            events.append((name, data))
            name, data = "message", ""
    return events


async def test_a_stream_pushes_changes_without_a_new_request(
    client: TestClient,  # type: ignore[type-arg]
    source: ListSource,
) -> None:
    response = await client.get("/api/stream?view=workloads&namespace=team-a", headers=bearer(TEAM))
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    [(name, first)] = await _events(response, 1)
    assert name == "view" and '"mine"' in first and '"pending"' in first
    source.wls[0] = workload(
        "team-a", "mine", conditions=[condition("QuotaReserved", "True", "QuotaReserved")]
    )
    [(name, second)] = await _events(response, 1)
    assert name == "view" and '"quotareserved"' in second
    response.close()


async def test_streams_per_user_are_bounded(client: TestClient) -> None:  # type: ignore[type-arg]
    opened = [
        await client.get("/api/stream?view=workloads&namespace=team-a", headers=bearer(TEAM))
        for _ in range(2)
    ]
    assert [r.status for r in opened] == [200, 200]
    third = await client.get("/api/stream?view=workloads&namespace=team-a", headers=bearer(TEAM))
    assert third.status == 429
    other_user = await client.get("/api/stream?view=queues", headers=bearer(ADMIN))
    assert other_user.status == 200
    other_user.close()
    opened[0].close()
    for _ in range(100):
        again = await client.get(
            "/api/stream?view=workloads&namespace=team-a", headers=bearer(TEAM)
        )
        if again.status == 200:
            again.close()
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("a closed stream never freed its slot")
    opened[1].close()


async def test_a_stream_ends_when_the_token_stops_being_accepted(
    client: TestClient,  # type: ignore[type-arg]
    auth: GrantsAuth,
) -> None:
    response = await client.get("/api/stream?view=queues", headers=bearer(ADMIN))
    await _events(response, 1)
    del auth.tokens[ADMIN]  # expired or revoked: TokenReview now says no
    [(name, _)] = await _events(response, 1)
    assert name == "unauthorized"
    assert await asyncio.wait_for(response.content.read(), 5) == b""


async def test_a_stream_ends_when_rbac_is_revoked(
    client: TestClient,  # type: ignore[type-arg]
    auth: GrantsAuth,
) -> None:
    response = await client.get("/api/stream?view=queues", headers=bearer(ADMIN))
    await _events(response, 1)
    auth.grants.discard(("admin", "list", "clusterqueues", "*"))
    [(name, _)] = await _events(response, 1)
    assert name == "forbidden"


async def test_tokens_never_reach_the_logs(client: TestClient) -> None:  # type: ignore[type-arg]
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        assert (await client.get("/api/views/queues", headers=bearer(TEAM))).status == 403
        assert (await client.get(f"/api/views/queues?token={TEAM}")).status == 400
        assert (await client.get("/api/views/queues", headers=bearer("forged"))).status == 401
    assert any(entry.get("event") == "dashboard.forbidden" for entry in logs)
    assert TEAM not in repr(logs) and "forged" not in repr(logs)
