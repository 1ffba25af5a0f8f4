"""`fleetq dashboard`'s local proxy: adds the token, answers only its own address, and lets
writes through only from its own page."""

from __future__ import annotations

from pathlib import Path

import yaml
from aiohttp.test_utils import TestClient, TestServer

from cli.dashboard_command import LocalAddress, kubeconfig_token, proxy_app
from hub.dashboard.server import Dashboard
from tests.unit.hub.dashboard.doubles import GrantsAuth, ListSource, RecordedActions

TOKEN = "viewer-token"


def _dashboard(actions: RecordedActions) -> Dashboard:
    auth = GrantsAuth(
        tokens={TOKEN: "viewer"},
        grants={
            ("viewer", "list", "clusterqueues", "*"),
            ("viewer", "patch", "clusterqueues", "*"),
        },
    )
    cqs = [{"metadata": {"name": "cq"}, "spec": {}, "status": {}}]
    return Dashboard(ListSource(cqs=cqs), auth, actions)


async def test_the_proxy_adds_the_token_and_guards_writes() -> None:
    actions = RecordedActions()
    async with TestClient(TestServer(_dashboard(actions).app())) as hub:
        address = LocalAddress()
        upstream = str(hub.make_url("/"))
        async with TestClient(TestServer(proxy_app(upstream, TOKEN, True, address))) as local:
            address.host = f"127.0.0.1:{local.port}"
            own = {"Host": address.host}
            view = await local.get("/api/views/queues", headers=own)
            assert view.status == 200
            assert [q["name"] for q in (await view.json())["clusterQueues"]] == ["cq"]
            assert view.headers["X-Frame-Options"] == "DENY"
            rebound = await local.get("/api/views/queues", headers={"Host": "evil.example:80"})
            assert rebound.status == 421
            csrf = (await (await local.get("/api/session", headers=own)).json())["csrf"]
            body = {"name": "cq"}
            path = "/api/actions/stop-cluster-queue"
            foreign = await local.post(
                path,
                json=body,
                headers={**own, "Origin": "https://evil.example", "X-CSRF-Token": csrf},
            )
            assert foreign.status == 403
            done = await local.post(
                path,
                json=body,
                headers={**own, "Origin": f"http://{address.host}", "X-CSRF-Token": csrf},
            )
            assert done.status == 200, await done.text()
            assert actions.done == [("stop", "cq")]


def test_the_token_comes_from_the_current_kubeconfig_user(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "current-context": "b",
                "contexts": [
                    {"name": "a", "context": {"user": "ua"}},
                    {"name": "b", "context": {"user": "ub"}},
                ],
                "users": [
                    {"name": "ua", "user": {"token": "wrong"}},
                    {"name": "ub", "user": {"token": "right"}},
                ],
            }
        )
    )
    assert kubeconfig_token(kubeconfig) == "right"
    certificates = tmp_path / "certs"
    certificates.write_text(yaml.safe_dump({"current-context": "a", "contexts": [], "users": []}))
    assert kubeconfig_token(certificates) is None
