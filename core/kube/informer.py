"""Informer: a local cache of one resource on one cluster, kept current by list+watch.

Guarantees:
- reads (`store`) never hit the apiserver; after `wait_synced()` the store holds at least
  the state of a consistent list, and from then on every change the watch delivers;
- handlers see each change once, in order: `on_add`, `on_update(old, new)`, `on_delete`.
  A re-list (after 410 Gone) is diffed against the store, so objects that did not change
  produce no events, objects changed or deleted while the watch was away produce exactly
  one update or delete, and nothing is lost or duplicated;
- events that carry a resourceVersion the store already holds (replays after a resume)
  are dropped;
- a failing handler is logged and skipped; it never stops the informer or other handlers;
  neither does an object that does not decode into the cache's type (logged, left out).
Handlers run on the event loop and must be quick: enqueue a key, don't do I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from core.kube.client import KubeClient
from core.kube.object_meta import object_key, resource_version_of
from core.kube.object_store import IndexFunc, ObjectStore, StoreDiff
from core.kube.resources import ResourceRef
from core.kube.watch import (
    DEFAULT_WATCH_TIMEOUT_SECONDS,
    Listed,
    ListWatcher,
    WatchEvent,
    WatchEventType,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class EventHandlers(Generic[T]):
    """Callbacks for changes; any may be left out."""

    on_add: Callable[[T], None] | None = None
    on_update: Callable[[T, T], None] | None = None
    on_delete: Callable[[T], None] | None = None


class Informer(Generic[T]):
    """Cache + change notifications for one (cluster, resource[, namespace, selectors])."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceRef,
        *,
        into: type[T],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc[T]] | None = None,
        watch_timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.store: ObjectStore[T] = ObjectStore(indexers)
        self.watcher: ListWatcher[T] = ListWatcher(
            client,
            resource,
            into=into,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            timeout_seconds=watch_timeout_seconds,
        )
        self.log = self.watcher.log
        self._handlers: list[EventHandlers[T]] = []
        self._synced = asyncio.Event()

    def add_handlers(self, handlers: EventHandlers[T]) -> None:
        """Register callbacks; objects already cached are announced to them as adds."""
        self._handlers.append(handlers)
        if handlers.on_add is not None:
            for obj in self.store:
                self._call(handlers.on_add, obj)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout_seconds: float | None = None) -> None:
        """Wait until the first list has been stored (raises TimeoutError)."""
        async with asyncio.timeout(timeout_seconds):
            await self._synced.wait()

    @property
    def resource_version(self) -> str:
        """The version the cache is current to (advanced by events and bookmarks)."""
        return self.watcher.resource_version

    async def run(self, *, resume_from: str | None = None) -> None:
        """Keep the cache current until cancelled.

        `resume_from` (with a store already filled by an earlier run) watches from that
        version instead of listing; an expired version falls back to a re-list.
        """
        if resume_from and len(self.store):
            self._synced.set()
        async for item in self.watcher.events(resume_from=resume_from):
            if isinstance(item, Listed):
                self._replace(item)
            else:
                self._apply(item)

    def _replace(self, listed: Listed[T]) -> None:
        for item in listed.items:
            drop_managed_fields(item)
        diff: StoreDiff[T] = self.store.replace(listed.items)
        self.log.info(
            "informer.listed",
            count=len(self.store),
            added=len(diff.added),
            updated=len(diff.updated),
            deleted=len(diff.deleted),
            resource_version=listed.resource_version,
        )
        for obj in diff.added:
            self._notify_add(obj)
        for old, new in diff.updated:
            self._notify_update(old, new)
        for obj in diff.deleted:
            self._notify_delete(obj)
        self._synced.set()

    def _apply(self, event: WatchEvent[T]) -> None:
        if event.type is WatchEventType.BOOKMARK:
            return
        try:
            obj = event.object
        except msgspec.ValidationError as error:
            self.watcher.stats.undecodable += 1
            self.log.error(
                "informer.undecodable", key=event.key, event_type=event.type.value, error=str(error)
            )
            if event.type is WatchEventType.DELETED:
                gone = self.store.remove(event.key)
                if gone is not None:
                    self._notify_delete(gone)
            return
        if event.type is WatchEventType.DELETED:
            if self.store.remove(object_key(obj)) is not None:
                self._notify_delete(obj)
            return
        drop_managed_fields(obj)
        old = self.store.upsert(obj)
        if old is None:
            self._notify_add(obj)
        elif resource_version_of(old) != resource_version_of(obj):
            self._notify_update(old, obj)

    def _notify_add(self, obj: T) -> None:
        for handlers in self._handlers:
            if handlers.on_add is not None:
                self._call(handlers.on_add, obj)

    def _notify_update(self, old: T, new: T) -> None:
        for handlers in self._handlers:
            if handlers.on_update is not None:
                self._call(handlers.on_update, old, new)

    def _notify_delete(self, obj: T) -> None:
        for handlers in self._handlers:
            if handlers.on_delete is not None:
                self._call(handlers.on_delete, obj)

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:
            self.log.exception("informer.handler_failed", key=object_key(args[-1]))


def drop_managed_fields(obj: object) -> None:
    """Cached JSON objects leave out `metadata.managedFields`.

    No reader needs them, and on objects many writers touch (a Workload's status) they
    can outweigh the rest of the object, so a cache of thousands carries them for nothing.
    An update built from a cached copy still keeps them: the apiserver retains the stored
    managedFields when a request does not send any. Typed caches (msgspec structs) never
    decode them in the first place.
    """
    if isinstance(obj, dict):
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
