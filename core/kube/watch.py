"""List-then-watch streams that never end gracefully: they are recreated.

`watch_once` is one watch connection: newline-delimited JSON events, each decoded by msgspec
into a `WatchEvent` whose object stays raw bytes until someone reads it (a consumer that
only needs the key or resourceVersion never pays for a full decode). An ERROR event raises
the typed error it carries (`Gone` for an expired resourceVersion).

`ListWatcher` turns connections into an endless stream for one resource:
- it lists first (following continue tokens) and yields the snapshot as `Listed`, then
  watches from the list's resourceVersion with `allowWatchBookmarks=true`;
- every event (bookmarks included) advances its resourceVersion, so a reconnect resumes
  exactly where the last connection stopped, without replaying or skipping events;
- when the server closes a watch (its `timeoutSeconds` elapsed) it reconnects at once;
- on `410 Gone` / "too old resource version" it lists again and yields a fresh `Listed`,
  which consumers diff against what they hold (see core.kube.informer);
- on connection errors, throttling or server errors it reconnects with exponential backoff.
Only cancellation stops it.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import aiohttp
import msgspec

from core.kube.backoff import ExponentialBackoff
from core.kube.body_codec import decode_body
from core.kube.client import KubeClient
from core.kube.errors import ApiError, Gone, Status, TransportError, error_from_status
from core.kube.object_meta import make_key, resource_version_of
from core.kube.resources import ResourceRef, collection_path, resource_label

T = TypeVar("T")

DEFAULT_WATCH_TIMEOUT_SECONDS = 300
READ_SLACK_SECONDS = 30.0
RECONNECT_BACKOFF = ExponentialBackoff(base_seconds=0.2, cap_seconds=30.0, jitter=0.5)


class WatchEventType(enum.StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


class _WireEvent(msgspec.Struct):
    type: WatchEventType
    object: msgspec.Raw


class _MetaOnly(msgspec.Struct):
    resource_version: str = msgspec.field(default="", name="resourceVersion")
    name: str = ""
    namespace: str = ""


class _ObjectMetaOnly(msgspec.Struct):
    metadata: _MetaOnly = msgspec.field(default_factory=_MetaOnly)


_WIRE_DECODER = msgspec.json.Decoder(_WireEvent)
_META_DECODER = msgspec.json.Decoder(_ObjectMetaOnly)
_STATUS_DECODER = msgspec.json.Decoder(Status)


class WatchEvent(Generic[T]):
    """One watch event; `object` is decoded into the requested type on first access."""

    __slots__ = ("_decoded", "_into", "raw", "type")

    def __init__(self, type: WatchEventType, raw: msgspec.Raw, into: type[T]) -> None:
        self.type = type
        self.raw = raw
        self._into = into
        self._decoded: T | None = None

    @property
    def object(self) -> T:
        if self._decoded is None:
            self._decoded = decode_body(memoryview(self.raw), self._into)
        return self._decoded

    @property
    def resource_version(self) -> str:
        """The event's resourceVersion, read without decoding the whole object if possible."""
        if self._decoded is not None:
            return resource_version_of(self._decoded)
        return _META_DECODER.decode(self.raw).metadata.resource_version

    @property
    def key(self) -> str:
        """`namespace/name` of the object, read without decoding it into the cache's type."""
        meta = _META_DECODER.decode(self.raw).metadata
        return make_key(meta.namespace, meta.name)

    def status(self) -> Status:
        """The Status carried by an ERROR event."""
        return _STATUS_DECODER.decode(self.raw)

    def __repr__(self) -> str:
        return f"WatchEvent({self.type.value}, rv={self.resource_version})"


def decode_watch_line(line: bytes | memoryview, into: type[T]) -> WatchEvent[T]:
    """Decode one line of a watch stream (raises msgspec.DecodeError on garbage)."""
    wire = _WIRE_DECODER.decode(line)
    return WatchEvent(wire.type, wire.object, into)


async def split_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Reassemble newline-delimited records from arbitrarily cut chunks (no size limit)."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            if end > start:
                yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
    if buffer.strip():
        yield bytes(buffer)


def watch_query(
    resource_version: str,
    *,
    timeout_seconds: int,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> dict[str, str]:
    query = {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(timeout_seconds),
        "resourceVersion": resource_version,
    }
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    return query


async def watch_once(
    client: KubeClient,
    resource: ResourceRef,
    *,
    resource_version: str,
    into: type[T],
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
) -> AsyncIterator[WatchEvent[T]]:
    """One watch connection from `resource_version` until the server closes it.

    ERROR events raise their typed error (`Gone` when the version is too old); broken or
    stalled connections raise `TransportError`.
    """
    path = collection_path(resource, namespace)
    query = watch_query(
        resource_version,
        timeout_seconds=timeout_seconds,
        label_selector=label_selector,
        field_selector=field_selector,
    )
    async with client.stream(
        path, query=query, read_timeout_seconds=timeout_seconds + READ_SLACK_SECONDS
    ) as response:
        try:
            async for line in split_lines(response.content.iter_any()):
                event = decode_watch_line(line, into)
                if event.type is WatchEventType.ERROR:
                    raise error_from_status(event.status(), method="WATCH", path=path)
                yield event
        except (aiohttp.ClientError, OSError, TimeoutError, msgspec.DecodeError) as error:
            # A broken, stalled or truncated stream: the caller reconnects.
            raise TransportError(
                f"{client.name}: watch {path}: {type(error).__name__}: {error}"
            ) from error


@dataclass(frozen=True, slots=True)
class Listed(Generic[T]):
    """A full snapshot: every object that exists at `resource_version`."""

    items: list[T]
    resource_version: str


@dataclass(slots=True)
class WatchStats:
    """What a ListWatcher went through; tests and metrics read it."""

    lists: int = 0
    connections: int = 0
    events: int = 0
    bookmarks: int = 0
    expired: int = 0
    errors: int = 0
    undecodable: int = 0


class ListWatcher(Generic[T]):
    """An endless list+watch stream of one resource (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceRef,
        *,
        into: type[T],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
        backoff: ExponentialBackoff = RECONNECT_BACKOFF,
    ) -> None:
        self.client = client
        self.resource = resource
        self.into = into
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.resource_version = ""
        self.stats = WatchStats()
        self.log = client.log.bind(resource=resource_label(resource), namespace=namespace)

    async def events(
        self, *, resume_from: str | None = None
    ) -> AsyncIterator[Listed[T] | WatchEvent[T]]:
        """Yield a `Listed` snapshot, then events; again a `Listed` after every re-list.

        With `resume_from` the stream starts watching from that resourceVersion without a
        list (the consumer already holds the state as of that version); if the version has
        expired, it lists as usual.
        """
        self.resource_version = resume_from or ""
        failures = 0
        while True:
            try:
                if not self.resource_version:
                    listed = await self._list()
                    failures = 0
                    yield listed
                started = time.monotonic()
                delivered = 0
                async for event in self._watch():
                    delivered += 1
                    failures = 0
                    yield event
                if delivered == 0 and time.monotonic() - started < 1.0:
                    # The server closed at once: treat it like a failure, not a busy loop.
                    failures += 1
                    await asyncio.sleep(self.backoff.delay(failures - 1))
            except Gone as error:
                self.stats.expired += 1
                self.log.info(
                    "watch.expired", resource_version=self.resource_version, error=error.message
                )
                self.resource_version = ""
            except (TransportError, ApiError) as error:
                self.stats.errors += 1
                delay = self._retry_delay(error, failures)
                failures += 1
                self.log.warning("watch.retry", error=str(error), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def _list(self) -> Listed[T]:
        raw_items, version = await self.client.list_all(
            self.resource,
            into=msgspec.Raw,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        items: list[T] = []
        for raw in raw_items:
            try:
                items.append(decode_body(memoryview(raw), self.into))
            except msgspec.ValidationError as error:
                # One malformed object must not hide all the others.
                self.stats.undecodable += 1
                self.log.error("watch.undecodable", error=str(error))
        self.stats.lists += 1
        self.resource_version = version
        self.log.debug("watch.listed", count=len(items), resource_version=version)
        return Listed(items, version)

    async def _watch(self) -> AsyncIterator[WatchEvent[T]]:
        # Spread reconnects of many watchers, like client-go's randomized watch timeouts.
        timeout = int(self.timeout_seconds * (1 + random.random() / 4))
        self.stats.connections += 1
        async for event in watch_once(
            self.client,
            self.resource,
            resource_version=self.resource_version,
            into=self.into,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
        ):
            self.resource_version = event.resource_version or self.resource_version
            if event.type is WatchEventType.BOOKMARK:
                self.stats.bookmarks += 1
            else:
                self.stats.events += 1
            yield event

    def _retry_delay(self, error: TransportError | ApiError, failures: int) -> float:
        delay = self.backoff.delay(failures)
        retry_after = getattr(error, "retry_after_seconds", None)
        return max(delay, retry_after) if retry_after else delay
