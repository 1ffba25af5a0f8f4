"""ListWatcher recovery, driven by a scripted HTTP server on localhost: a truncated stream
reconnects from the last version, an expired version re-lists, and a graceful close
resumes without a list. The apiserver itself is exercised in tests/integration/kube."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from core.kube.backoff import ExponentialBackoff
from core.kube.client import KubeClient
from core.kube.cluster_config import KubeconfigPolicy, from_kubeconfig
from core.kube.resources import CONFIGMAPS
from core.kube.watch import Listed, ListWatcher, WatchEvent

pytestmark = pytest.mark.asyncio(loop_scope="session")


def cm(name: str, rv: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}}


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


class ScriptedApiserver:
    """Answers lists with a fixed snapshot and each watch with the next scripted stream."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[list[bytes]]) -> None:
        self.lists = lists
        self.watches = watches
        self.requests: list[str] = []
        self.closing = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            self.requests.append("list")
            return web.json_response(self.lists.pop(0))
        self.requests.append(f"watch@{request.query['resourceVersion']}")
        assert request.query["allowWatchBookmarks"] == "true"
        response = web.StreamResponse()
        await response.prepare(request)
        script = self.watches.pop(0) if self.watches else []
        for chunk in script:
            await response.write(chunk)
        if not self.watches and not script:
            await self.closing.wait()  # the last watch stays open
        return response


@pytest.fixture
async def server_client(
    unused_tcp_port_factory: Any,
) -> AsyncIterator[tuple[ScriptedApiserver, KubeClient]]:
    script = ScriptedApiserver(
        lists=[
            {"metadata": {"resourceVersion": "10"}, "items": [cm("a", 5)]},
            {"metadata": {"resourceVersion": "20"}, "items": [cm("a", 5), cm("b", 19)]},
        ],
        watches=[
            # 1: one event, then the connection dies mid-line.
            [event("ADDED", cm("b", 11)), b'{"type":"MODIF'],
            # 2: resumed from 11; the server has compacted it away.
            [
                event(
                    "ERROR",
                    {
                        "kind": "Status",
                        "code": 410,
                        "reason": "Expired",
                        "message": "too old resource version: 11 (15)",
                    },
                )
            ],
            # 3: after the re-list, a bookmark, then a normal close (timeout elapsed).
            [event("BOOKMARK", {"metadata": {"resourceVersion": "21"}})],
        ],
    )
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/configmaps", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = unused_tcp_port_factory()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    config = await from_kubeconfig(
        {
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
        },
        policy=KubeconfigPolicy(allow_insecure=True),
    )
    client = KubeClient(config)
    yield script, client
    script.closing.set()
    await client.close()
    await runner.cleanup()


async def test_the_stream_recovers_from_truncation_and_expiry_and_resumes_after_close(
    server_client: tuple[ScriptedApiserver, KubeClient],
) -> None:
    script, client = server_client
    watcher: ListWatcher[dict[str, Any]] = ListWatcher(
        client,
        CONFIGMAPS,
        into=dict,
        namespace="ns",
        timeout_seconds=5,
        backoff=ExponentialBackoff(base_seconds=0.01, cap_seconds=0.05),
    )
    seen: list[str] = []

    async def consume() -> None:
        async for item in watcher.events():
            if isinstance(item, Listed):
                seen.append(f"listed@{item.resource_version}:{len(item.items)}")
            else:
                assert isinstance(item, WatchEvent)
                seen.append(f"{item.type.value}@{item.resource_version}")

    consumer = asyncio.create_task(consume())
    try:
        async with asyncio.timeout(10):
            while len(script.requests) < 6:
                await asyncio.sleep(0.01)
    finally:
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)

    assert seen == ["listed@10:1", "ADDED@11", "listed@20:2", "BOOKMARK@21"]
    assert script.requests == ["list", "watch@10", "watch@11", "list", "watch@20", "watch@21"]
    assert watcher.stats.errors == 1  # the truncated line
    assert watcher.stats.expired == 1
    assert watcher.stats.bookmarks == 1
    assert watcher.resource_version == "21"
