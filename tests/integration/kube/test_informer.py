"""Informers on a real apiserver: changes by another client, selectors, indexes, bookmarks,
and a forced 410 Gone that re-lists without losing or duplicating a single object."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from core.api.api_struct import ApiStruct
from core.api.local_queue import LocalQueue
from core.api.meta import ObjectMeta
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import Gone, TooManyRequests
from core.kube.informer import EventHandlers, Informer
from core.kube.object_meta import name_of
from core.kube.object_store import label_index
from core.kube.resources import CONFIGMAPS
from core.kube.watch import Listed, ListWatcher, WatchEventType, watch_once
from devfleet.cluster_access import RunningFleet
from tests import builders

pytestmark = pytest.mark.asyncio(loop_scope="session")

ClientFactory = Callable[..., Awaitable[KubeClient]]
LOCAL_QUEUES = kind_info("LocalQueue")


class Recorder:
    """Handler calls in order, as (event, name, resourceVersion)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def handlers(self) -> EventHandlers[Any]:
        return EventHandlers(
            on_add=lambda obj: self._note("add", obj),
            on_update=lambda old, new: self._note("update", new),
            on_delete=lambda obj: self._note("delete", obj),
        )

    def _note(self, event: str, obj: Any) -> None:
        self.calls.append((event, name_of(obj)))
        self.changed.set()

    async def wait_for(self, *expected: tuple[str, str], timeout: float = 10) -> None:
        async with asyncio.timeout(timeout):
            while not all(call in self.calls for call in expected):
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Informer[Any]], Awaitable[None]]]:
    """Start informers in a task group; they are cancelled when the test ends."""
    tasks: list[asyncio.Task[None]] = []

    async def start(informer: Informer[Any]) -> None:
        tasks.append(asyncio.create_task(informer.run()))
        await informer.wait_synced(timeout_seconds=10)

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def cm(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"v": "0"},
    }


async def test_the_cache_follows_changes_made_by_another_client(
    kube: KubeClient, client_factory: ClientFactory, namespace: str, running: Any
) -> None:
    other = await client_factory()
    await other.create(CONFIGMAPS, cm("before", namespace, queue="q1"))
    # The selector keeps out what the controller-manager adds to every namespace
    # (kube-root-ca.crt) when the session fleet is a full one.
    informer: Informer[dict[str, Any]] = Informer(
        kube,
        CONFIGMAPS,
        into=dict,
        namespace=namespace,
        label_selector="queue",
        indexers={"queue": label_index("queue")},
    )
    recorder = Recorder()
    informer.add_handlers(recorder.handlers())
    await running(informer)
    assert informer.has_synced
    assert informer.store.keys() == [f"{namespace}/before"]
    assert recorder.calls == [("add", "before")]

    await other.create(CONFIGMAPS, cm("a", namespace, queue="q1"))
    await other.patch(CONFIGMAPS, "a", {"data": {"v": "1"}}, namespace=namespace)
    await other.delete(CONFIGMAPS, "before", namespace=namespace)
    await recorder.wait_for(("add", "a"), ("update", "a"), ("delete", "before"))

    assert recorder.calls == [
        ("add", "before"),
        ("add", "a"),
        ("update", "a"),
        ("delete", "before"),
    ]
    cached = informer.store.get(f"{namespace}/a")
    assert cached is not None and cached["data"] == {"v": "1"}
    assert [name_of(o) for o in informer.store.by_index("queue", "q1")] == ["a"]
    # Reads come from the cache: no request was sent by the informer's client for them.
    assert kube.writes.total == 0

    # The cache leaves managedFields out; an update sent from a cached copy keeps them.
    stored = await other.get(CONFIGMAPS, "a", namespace=namespace)
    assert stored["metadata"].get("managedFields")
    assert "managedFields" not in cached["metadata"]
    await other.replace(CONFIGMAPS, "a", {**cached, "data": {"v": "2"}}, namespace=namespace)
    after = await other.get(CONFIGMAPS, "a", namespace=namespace)
    assert after["data"] == {"v": "2"}
    assert after["metadata"].get("managedFields")


async def test_label_and_field_selectors_limit_what_is_cached(
    kube: KubeClient, namespace: str, running: Any
) -> None:
    await kube.create(CONFIGMAPS, cm("mine", namespace, team="a"))
    await kube.create(CONFIGMAPS, cm("theirs", namespace, team="b"))
    by_label: Informer[dict[str, Any]] = Informer(
        kube, CONFIGMAPS, into=dict, namespace=namespace, label_selector="team=a"
    )
    by_field: Informer[dict[str, Any]] = Informer(
        kube, CONFIGMAPS, into=dict, namespace=namespace, field_selector="metadata.name=theirs"
    )
    await running(by_label)
    await running(by_field)
    assert [name_of(o) for o in by_label.store] == ["mine"]
    assert [name_of(o) for o in by_field.store] == ["theirs"]

    recorder = Recorder()
    by_label.add_handlers(recorder.handlers())
    await kube.patch(
        CONFIGMAPS, "theirs", {"metadata": {"labels": {"team": "a"}}}, namespace=namespace
    )
    await recorder.wait_for(("add", "theirs"))
    await kube.patch(
        CONFIGMAPS, "mine", {"metadata": {"labels": {"team": "c"}}}, namespace=namespace
    )
    # Leaving the selector shows up as a delete.
    await recorder.wait_for(("delete", "mine"))
    assert [name_of(o) for o in by_label.store] == ["theirs"]


def local_queue(name: str, namespace: str) -> dict[str, Any]:
    return builders.LocalQueue(name, namespace).cluster_queue("cq").obj()


async def test_a_too_old_resource_version_is_gone(
    kueue_crds: RunningFleet, kube: KubeClient, namespace: str
) -> None:
    # The LocalQueue watch cache started when the CRD was installed, long after version 1.
    # (Right after installation the cache may still be initialising: 429, try again.)
    async with asyncio.timeout(20):
        while True:
            try:
                async for _ in watch_once(
                    kube,
                    LOCAL_QUEUES,
                    resource_version="1",
                    into=LocalQueue,
                    namespace=namespace,
                    timeout_seconds=5,
                ):
                    pass
            except TooManyRequests:
                await asyncio.sleep(0.5)
                continue
            except Gone as gone:
                assert "too old resource version" in gone.message
                return
            raise AssertionError("a watch from version 1 was accepted")


async def test_after_410_the_informer_relists_and_loses_or_duplicates_nothing(
    kueue_crds: RunningFleet, kube: KubeClient, namespace: str
) -> None:
    for name in ("same", "changed", "deleted"):
        await kube.create(LOCAL_QUEUES, local_queue(name, namespace))
    informer: Informer[LocalQueue] = Informer(
        kube, LOCAL_QUEUES, into=LocalQueue, namespace=namespace
    )
    recorder = Recorder()
    informer.add_handlers(recorder.handlers())
    first_run = asyncio.create_task(informer.run())
    await informer.wait_synced(10)
    assert sorted(recorder.calls) == [("add", "changed"), ("add", "deleted"), ("add", "same")]
    first_run.cancel()
    await asyncio.gather(first_run, return_exceptions=True)
    recorder.calls.clear()

    # While the informer is away: one update, one delete, one add.
    await kube.patch(LOCAL_QUEUES, "changed", {"spec": {"stopPolicy": "Hold"}}, namespace=namespace)
    await kube.delete(LOCAL_QUEUES, "deleted", namespace=namespace)
    await kube.create(LOCAL_QUEUES, local_queue("added", namespace))

    # Resume from a version the apiserver has long forgotten: 410 Gone, then a re-list.
    second_run = asyncio.create_task(informer.run(resume_from="1"))
    try:
        await recorder.wait_for(("update", "changed"), ("delete", "deleted"), ("add", "added"))
        await asyncio.sleep(0.3)  # anything duplicated would arrive now
    finally:
        second_run.cancel()
        await asyncio.gather(second_run, return_exceptions=True)

    assert informer.watcher.stats.expired == 1
    assert informer.watcher.stats.lists == 2
    assert sorted(recorder.calls) == [
        ("add", "added"),
        ("delete", "deleted"),
        ("update", "changed"),
    ]
    server, _ = await kube.list_all(LOCAL_QUEUES, namespace=namespace, into=LocalQueue)
    assert {name_of(o): o.metadata.resource_version for o in informer.store} == {
        name_of(o): o.metadata.resource_version for o in server
    }
    changed = informer.store.get_by_name("changed", namespace)
    assert changed is not None and changed.spec.stop_policy == "Hold"


async def test_bookmarks_arrive_and_advance_the_resource_version(
    kube: KubeClient,
    namespace: str,
    namespace_factory: Callable[..., str],
    lite_fleet: RunningFleet,
) -> None:
    watcher: ListWatcher[dict[str, Any]] = ListWatcher(
        kube, CONFIGMAPS, into=dict, namespace=namespace, timeout_seconds=3
    )
    elsewhere = namespace_factory(clusters=(lite_fleet.manager,))

    async def change_elsewhere() -> None:
        await asyncio.sleep(0.5)  # once the watch is open
        await kube.create(CONFIGMAPS, cm("elsewhere", elsewhere))

    listed_at = ""
    async with asyncio.timeout(15), asyncio.TaskGroup() as group:
        async for item in watcher.events():
            if isinstance(item, Listed):
                listed_at = item.resource_version
                # A change the watch filters out: only a bookmark can tell us of its version.
                group.create_task(change_elsewhere())
            elif item.type is WatchEventType.BOOKMARK:
                break
    assert watcher.stats.bookmarks == 1
    assert watcher.stats.events == 0
    assert int(watcher.resource_version) > int(listed_at)


class NumericConfigMap(ApiStruct):
    """A type most ConfigMaps do not fit: data values must be integers."""

    metadata: ObjectMeta
    data: dict[str, int] = {}


async def test_objects_that_do_not_fit_the_type_are_skipped_not_fatal(
    kube: KubeClient, namespace: str, running: Any
) -> None:
    mine = {"case": "fit"}
    await kube.create(
        CONFIGMAPS, {"metadata": {"name": "fits", "namespace": namespace, "labels": mine}}
    )
    await kube.create(CONFIGMAPS, cm("misfit", namespace, **mine))  # data {"v": "0"}: a string
    informer: Informer[NumericConfigMap] = Informer(
        kube, CONFIGMAPS, into=NumericConfigMap, namespace=namespace, label_selector="case"
    )
    recorder = Recorder()
    informer.add_handlers(recorder.handlers())
    await running(informer)
    assert informer.store.keys() == [f"{namespace}/fits"]
    assert informer.watcher.stats.undecodable == 1

    await kube.create(CONFIGMAPS, cm("misfit-2", namespace, **mine))
    await kube.delete(CONFIGMAPS, "misfit", namespace=namespace)
    await kube.delete(CONFIGMAPS, "fits", namespace=namespace)
    await kube.create(
        CONFIGMAPS, {"metadata": {"name": "after", "namespace": namespace, "labels": mine}}
    )
    await recorder.wait_for(("delete", "fits"), ("add", "after"))

    assert informer.store.keys() == [f"{namespace}/after"]
    assert informer.watcher.stats.undecodable == 3
    assert recorder.calls == [("add", "fits"), ("delete", "fits"), ("add", "after")]
