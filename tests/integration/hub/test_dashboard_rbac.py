"""The hub's dashboard against a real apiserver: tokens checked by TokenReview, every view
and action by SubjectAccessReview, an allowed action written to the real ClusterQueue.

Three ServiceAccounts in the test's namespace: a viewer (a ClusterRole to read Kueue's
objects), an operator (the viewer's rights and `patch clusterqueues`) and nobody (no
binding). RBAC bindings are made before any request, since the hub remembers decisions
for a few seconds.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from core.manager import watched_kinds as kinds
from hub.app import HubOptions
from tests.integration.rbac_resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SERVICE_ACCOUNTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

READ = {
    "apiGroups": ["kueue.x-k8s.io"],
    "resources": ["clusterqueues", "localqueues", "cohorts", "workloads", "resourceflavors"],
    "verbs": ["get", "list", "watch"],
}


async def _account(cluster: Any, name: str, rules: list[dict[str, Any]] | None) -> str:
    """A ServiceAccount (bound to a ClusterRole of `rules`, if given) and a token for it."""
    await cluster.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}})
    if rules is not None:
        role = cluster.name(f"dash-{name}")
        await cluster.create(CLUSTER_ROLES, {"metadata": {"name": role}, "rules": rules})
        await cluster.create(
            CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": role},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": name, "namespace": cluster.namespace}
                ],
            },
        )
    answer = await cluster.client.request(
        "POST",
        f"/api/v1/namespaces/{cluster.namespace}/serviceaccounts/{name}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(orjson.loads(answer)["status"]["token"])


async def test_views_and_actions_follow_the_users_rbac(hubs: Any, cluster: Any) -> None:
    viewer = await _account(cluster, "viewer", [READ])
    operator = await _account(
        cluster,
        "operator",
        [
            READ,
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["patch"]},
        ],
    )
    nobody = await _account(cluster, "nobody", None)
    flavor = await cluster.flavor("cpu", {})
    cq = await cluster.cluster_queue("dash", flavor, "1")
    lq = await cluster.local_queue("main", cq)
    await cluster.workload("shown", lq)
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
    base = f"http://127.0.0.1:{hub.ports['dashboard']}"

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async with aiohttp.ClientSession() as http:

        async def status(path: str, token: str) -> int:
            async with http.get(base + path, headers=bearer(token)) as reply:
                return reply.status

        async def viewer_sees_queue() -> dict[str, Any] | None:
            async with http.get(base + "/api/views/queues", headers=bearer(viewer)) as reply:
                body = await reply.json() if reply.status == 200 else {}
            names = [q["name"] for q in body.get("clusterQueues", ())]
            return body if cq in names else None

        await cluster.eventually(viewer_sees_queue, what="the viewer's queues view", timeout=30)

        async def viewer_sees_workload() -> list[Any] | None:
            path = f"/api/views/workloads?namespace={cluster.namespace}"
            async with http.get(base + path, headers=bearer(viewer)) as reply:
                rows = (await reply.json())["rows"] if reply.status == 200 else []
            # Listed first as pending, then admitted: wait for the admitted row.
            admitted = [r for r in rows if r["state"] in ("admitted", "quotareserved")]
            return admitted if [r["name"] for r in admitted] == ["shown"] else None

        [row] = await cluster.eventually(viewer_sees_workload, what="the workloads view")
        assert row["clusterQueue"] == cq and row["state"] in ("admitted", "quotareserved")
        assert await status("/api/views/queues", nobody) == 403
        assert await status("/api/views/workloads", nobody) == 403
        assert await status("/api/views/queues", "not-a-token") == 401
        assert await status("/api/views/fleet", viewer) == 403  # no multikueueclusters rule

        async def session(token: str) -> dict[str, Any]:
            async with http.get(base + "/api/session", headers=bearer(token)) as reply:
                assert reply.status == 200
                return dict(await reply.json())

        seen_by_viewer = await session(viewer)
        assert seen_by_viewer["user"] == f"system:serviceaccount:{cluster.namespace}:viewer"
        assert seen_by_viewer["can"]["stop-cluster-queue"] is False
        seen_by_operator = await session(operator)
        assert seen_by_operator["can"]["stop-cluster-queue"] is True

        async def act(token: str, csrf: str) -> int:
            async with http.post(
                base + "/api/actions/stop-cluster-queue",
                json={"name": cq},
                headers={**bearer(token), "Origin": base, "X-CSRF-Token": csrf},
            ) as reply:
                return reply.status

        assert await act(viewer, seen_by_viewer["csrf"]) == 403
        assert (await cluster.get(kinds.CLUSTER_QUEUES, cq))["spec"].get("stopPolicy") in (
            None,
            "None",
        )
        assert await act(operator, seen_by_operator["csrf"]) == 200
        stopped = await cluster.get(kinds.CLUSTER_QUEUES, cq)
        assert stopped["spec"]["stopPolicy"] == "Hold"
