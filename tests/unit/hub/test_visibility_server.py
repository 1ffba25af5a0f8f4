"""The visibility API over HTTP: upstream's paths, status codes, JSON and Status bodies.

A real engine holds one admitted and three pending workloads in two LocalQueues of one
ClusterQueue; requests go through aiohttp's test server, so routing, middlewares and
encoding are exercised as a client would see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.typedefs import Handler, Middleware

from core.api.meta import OwnerReference
from core.engine.clock import ManualClock
from core.engine.engine import Engine
from core.engine.model import (
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from hub.visibility.engine_source import EngineSource, OwnerLookup, no_owners
from hub.visibility.server import HEALTH_PATH, create_app

BASE = "/apis/visibility.kueue.x-k8s.io"
CQ_PATH = BASE + "/{version}/clusterqueues/{name}/pendingworkloads"
LQ_PATH = BASE + "/{version}/namespaces/{ns}/localqueues/{name}/pendingworkloads"


def _engine() -> Engine:
    engine = Engine(clock=ManualClock(1_700_000_000))
    engine.upsert_resource_flavor(ResourceFlavor(name="default"))
    engine.upsert_namespace(Namespace(name="ml"))
    quota = FlavorQuotas(name="default", resources=(ResourceQuota(name="cpu", nominal=1000),))
    engine.upsert_cluster_queue(
        ClusterQueue(
            name="gpu",
            resource_groups=(ResourceGroup(covered_resources=("cpu",), flavors=(quota,)),),
        )
    )
    for lq in ("train", "serve"):
        engine.upsert_local_queue(LocalQueue(namespace="ml", name=lq, cluster_queue="gpu"))
    # (name, local queue, priority); created one second apart in this order.
    for n, (name, lq, priority) in enumerate(
        [("big", "train", 50), ("t1", "train", 0), ("s1", "serve", 3), ("t2", "train", 0)]
    ):
        engine.add_workload(
            Workload(
                namespace="ml",
                name=name,
                uid=f"uid-{name}",
                queue_name=lq,
                pod_sets=(PodSet(requests={"cpu": 1000}),),
                priority=priority,
                creation_time=1_700_000_000 + n,
            )
        )
    assert [a.key for a in engine.schedule().admitted] == ["ml/big"]
    return engine


def _client(
    owners: OwnerLookup = no_owners, middlewares: Sequence[Middleware] = ()
) -> TestClient[web.Request, web.Application]:
    """A client for a fresh app; `async with` starts and stops its server on the test's loop."""
    app = create_app(EngineSource(_engine(), owners=owners), middlewares=middlewares)
    return TestClient(TestServer(app))


async def _get_json(
    client: TestClient[web.Request, web.Application], path: str, status: int = 200
) -> Any:
    response = await client.get(path)
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    return await response.json()


def _names(body: Any) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


async def test_cluster_queue_pending_workloads() -> None:
    async with _client() as client:
        body = await _get_json(client, CQ_PATH.format(version="v1beta2", name="gpu"))
        assert body["kind"] == "PendingWorkloadsSummary"
        assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
        assert body["items"] == [
            {
                "metadata": {"name": name, "namespace": "ml", "creationTimestamp": stamp},
                "priority": priority,
                "localQueueName": lq,
                "positionInClusterQueue": cq_pos,
                "positionInLocalQueue": lq_pos,
            }
            for name, stamp, priority, lq, cq_pos, lq_pos in [
                ("s1", "2023-11-14T22:13:22Z", 3, "serve", 0, 0),
                ("t1", "2023-11-14T22:13:21Z", 0, "train", 1, 0),
                ("t2", "2023-11-14T22:13:23Z", 0, "train", 2, 1),
            ]
        ]


async def test_v1beta1_path_answers_in_v1beta1() -> None:
    async with _client() as client:
        body = await _get_json(client, CQ_PATH.format(version="v1beta1", name="gpu"))
        assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
        assert _names(body) == ["s1", "t1", "t2"]


async def test_local_queue_with_offset_and_limit() -> None:
    async with _client() as client:
        path = LQ_PATH.format(version="v1beta2", ns="ml", name="train")
        assert _names(await _get_json(client, path)) == ["t1", "t2"]
        body = await _get_json(client, path + "?offset=1&limit=5")
        assert [
            (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
            for i in body["items"]
        ] == [("t2", 2, 1)]


async def test_cluster_queue_limit() -> None:
    async with _client() as client:
        body = await _get_json(client, CQ_PATH.format(version="v1beta2", name="gpu") + "?limit=2")
        assert _names(body) == ["s1", "t1"]


async def test_owner_references_come_from_the_lookup() -> None:
    def owners(namespace: str, name: str) -> Sequence[OwnerReference]:
        return [OwnerReference(api_version="batch/v1", kind="Job", name=f"{name}-job", uid="u")]

    async with _client(owners=owners) as client:
        body = await _get_json(client, LQ_PATH.format(version="v1beta2", ns="ml", name="serve"))
    assert body["items"][0]["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "s1-job", "uid": "u"}
    ]


async def test_unknown_queues_are_404_status() -> None:
    async with _client() as client:
        cq = await _get_json(client, CQ_PATH.format(version="v1beta2", name="cpu"), 404)
        assert (cq["kind"], cq["reason"], cq["code"]) == ("Status", "NotFound", 404)
        assert cq["details"] == {
            "name": "cpu",
            "group": "visibility.kueue.x-k8s.io",
            "kind": "clusterqueue",
        }
        lq = await _get_json(
            client, LQ_PATH.format(version="v1beta2", ns="other", name="train"), 404
        )
        assert lq["message"] == 'localqueue.visibility.kueue.x-k8s.io "train" not found'


async def test_bad_query_is_400_status() -> None:
    async with _client() as client:
        path = CQ_PATH.format(version="v1beta2", name="gpu")
        for query in ("?limit=abc", "?offset=-2", "?limit=100001"):
            body = await _get_json(client, path + query, 400)
            assert (body["kind"], body["status"], body["reason"], body["code"]) == (
                "Status",
                "Failure",
                "BadRequest",
                400,
            )
        # A bad query is reported even for a queue that does not exist, as upstream does.
        missing = await _get_json(
            client, CQ_PATH.format(version="v1beta2", name="x") + "?limit=x", 400
        )
        assert missing["reason"] == "BadRequest"


async def test_discovery_documents() -> None:
    async with _client() as client:
        group = await _get_json(client, BASE)
        assert group["kind"] == "APIGroup"
        assert group["preferredVersion"]["version"] == "v1beta2"
        groups = await _get_json(client, "/apis")
        assert groups["groups"][0]["name"] == "visibility.kueue.x-k8s.io"
        for version in ("v1beta2", "v1beta1"):
            resources = await _get_json(client, f"{BASE}/{version}")
            assert resources["groupVersion"] == f"visibility.kueue.x-k8s.io/{version}"
            assert [r["name"] for r in resources["resources"]] == [
                "clusterqueues",
                "clusterqueues/pendingworkloads",
                "localqueues",
                "localqueues/pendingworkloads",
            ]


async def test_unknown_paths_and_versions_are_404_status() -> None:
    async with _client() as client:
        for path in (f"{BASE}/v1", CQ_PATH.format(version="v1", name="gpu"), f"{BASE}/v1beta2/x"):
            body = await _get_json(client, path, 404)
            assert (body["kind"], body["reason"]) == ("Status", "NotFound")


async def test_writes_are_405_status() -> None:
    async with _client() as client:
        response = await client.post(CQ_PATH.format(version="v1beta2", name="gpu"), data=b"{}")
        assert response.status == 405
        assert response.content_type == "application/json"
        body = await response.json()
        assert (body["reason"], body["code"]) == ("MethodNotAllowed", 405)
        assert "GET" in response.headers["Allow"]


async def test_healthz() -> None:
    async with _client() as client:
        response = await client.get(HEALTH_PATH)
        assert response.status == 200
        assert await response.text() == "ok"


async def test_auth_middleware_seam() -> None:
    @web.middleware
    async def only_alice(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == HEALTH_PATH:
            return await handler(request)
        user = request.headers.get("X-Remote-User")
        if user is None:
            raise web.HTTPUnauthorized(text="Unauthorized")
        if user != "alice":
            raise web.HTTPForbidden(text=f'user "{user}" cannot get pendingworkloads')
        return await handler(request)

    path = CQ_PATH.format(version="v1beta2", name="gpu")
    async with _client(middlewares=[only_alice]) as client:
        assert (await client.get(HEALTH_PATH)).status == 200
        anonymous = await _get_json(client, path, 401)
        assert anonymous["reason"] == "Unauthorized"
        response = await client.get(path, headers={"X-Remote-User": "bob"})
        assert response.status == 403
        body = await response.json()
        assert (body["reason"], body["message"]) == (
            "Forbidden",
            'user "bob" cannot get pendingworkloads',
        )
        alice = await client.get(path, headers={"X-Remote-User": "alice"})
        assert alice.status == 200


async def test_a_failing_source_is_a_500_status_not_a_crash() -> None:
    def broken(namespace: str, name: str) -> Sequence[OwnerReference]:
        raise KeyError(f"{namespace}/{name}")

    async with _client(owners=broken) as client:
        body = await _get_json(client, CQ_PATH.format(version="v1beta2", name="gpu"), 500)
        assert (body["reason"], body["code"]) == ("InternalError", 500)
        assert (await client.get(HEALTH_PATH)).status == 200
