"""Kubernetes Events (events.k8s.io/v1), recorded without blocking and without flooding.

Controllers call `record(...)` synchronously; nothing waits for the apiserver. Identical
events (same regarding object, reason, type, action, note and related object) within
`window_seconds` are aggregated client-side into one Event whose `series.count` and
`series.lastObservedTime` grow, the way the events.k8s.io API intends: a workload retried
a thousand times costs a handful of writes, not a thousand. Pending creates and series
updates are written by `flush()`, which `run()` calls every `flush_interval_seconds` (and
once more on shutdown). Events are best effort: a failed write is logged, never raised.

Events share the controller's client budget with the writes that matter, so they must
never crowd those out nor fall minutes behind: `run()` writes at most `qps` per second
(bursts of `burst`), and nothing while the client has requests waiting for budget; at
most `max_pending` events wait, and when more arrive the oldest waiting ones are dropped
and counted (`stats.dropped`, logged), so what is written is recent.
"""

from __future__ import annotations

import asyncio
import enum
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from core.api.api_struct import ApiStruct
from core.api.markers import always
from core.api.meta import ObjectMeta
from core.kube.client import KubeClient, PatchType
from core.kube.errors import KubeError, NotFound
from core.kube.micro_time import format_micro_time, utc_now
from core.kube.object_meta import name_of, namespace_of, uid_of
from core.kube.rate_limit import TokenBucket
from core.kube.resources import EVENTS

MAX_NOTE_BYTES = 1024
MAX_TRACKED_SERIES = 4096
DEFAULT_QPS = 5.0
DEFAULT_BURST = 25
DEFAULT_MAX_PENDING = 256


class EventType(enum.StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class ObjectReference(ApiStruct):
    """The object an event is about (core/v1 ObjectReference, the fields events use)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    uid: str = ""


class EventSeries(ApiStruct):
    count: int
    last_observed_time: str


class Event(ApiStruct):
    """An events.k8s.io/v1 Event."""

    api_version: str = always("events.k8s.io/v1")
    kind: str = always("Event")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    event_time: str = ""
    series: EventSeries | None = None
    reporting_controller: str = ""
    reporting_instance: str = ""
    action: str = ""
    reason: str = ""
    note: str = ""
    type: str = ""
    regarding: ObjectReference = msgspec.field(default_factory=ObjectReference)
    related: ObjectReference | None = None


def reference_to(obj: Any, *, kind: str, api_version: str) -> ObjectReference:
    """A reference to a cached object (typed or dict) for `record`."""
    return ObjectReference(
        api_version=api_version,
        kind=kind,
        name=name_of(obj),
        namespace=namespace_of(obj),
        uid=uid_of(obj),
    )


@dataclass(frozen=True, slots=True)
class _SeriesKey:
    regarding: tuple[str, ...]
    related: tuple[str, ...] | None
    reason: str
    action: str
    type: EventType
    note: str


@dataclass(slots=True)
class _Series:
    """One aggregated event as known locally."""

    name: str
    namespace: str
    first_seen: float
    regarding: ObjectReference
    related: ObjectReference | None
    count: int = 1
    last_observed: datetime = field(default_factory=utc_now)
    created: bool = False


@dataclass(slots=True)
class EventStats:
    recorded: int = 0
    created: int = 0
    series_updates: int = 0
    failed: int = 0
    dropped: int = 0
    """Occurrences never written because newer events displaced them."""


class EventRecorder:
    """Records events for one controller instance on one cluster (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        reporting_controller: str,
        reporting_instance: str,
        window_seconds: float = 600.0,
        flush_interval_seconds: float = 1.0,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        max_pending: int = DEFAULT_MAX_PENDING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self.window_seconds = window_seconds
        self.flush_interval_seconds = flush_interval_seconds
        self.max_pending = max_pending
        self.clock = clock
        self.stats = EventStats()
        self._budget = TokenBucket(qps, burst, clock=clock)
        self._series: OrderedDict[_SeriesKey, _Series] = OrderedDict()
        # Series with occurrences not written yet, oldest first.
        self._dirty: dict[_SeriesKey, None] = {}
        self._dropped_logged = 0
        self._flush_lock = asyncio.Lock()
        self.log = client.log.bind(component="events", controller=reporting_controller)

    def record(
        self,
        regarding: ObjectReference,
        reason: str,
        note: str,
        *,
        type: EventType = EventType.NORMAL,
        action: str = "",
        related: ObjectReference | None = None,
    ) -> None:
        """Note that something happened; written on the next flush (never blocks)."""
        self.stats.recorded += 1
        note = _truncate(note, MAX_NOTE_BYTES)
        key = _SeriesKey(
            _identity(regarding),
            _identity(related) if related else None,
            reason,
            action or reason,
            type,
            note,
        )
        now = self.clock()
        series = self._series.get(key)
        if series is not None and now - series.first_seen < self.window_seconds:
            series.count += 1
            series.last_observed = utc_now()
            self._series.move_to_end(key)
        else:
            self._series[key] = _Series(
                name=_event_name(regarding.name),
                namespace=regarding.namespace or "default",
                first_seen=now,
                regarding=regarding,
                related=related,
            )
            self._series.move_to_end(key)
        self._dirty.setdefault(key, None)
        while len(self._dirty) > self.max_pending:
            oldest = next(iter(self._dirty))
            del self._dirty[oldest]
            self.stats.dropped += 1
        while len(self._series) > MAX_TRACKED_SERIES:
            oldest, _ = self._series.popitem(last=False)
            self._dirty.pop(oldest, None)

    @property
    def pending(self) -> int:
        """Events (series) with occurrences waiting to be written."""
        return len(self._dirty)

    async def flush(self, limit: int | None = None) -> None:
        """Write pending event creations and series updates now, oldest first (at most
        `limit` writes; all of them when None)."""
        async with self._flush_lock:
            for key in list(self._dirty):
                if limit is not None and limit <= 0:
                    return
                series = self._series.get(key)
                if series is None:
                    self._dirty.pop(key, None)
                    continue
                count = series.count
                done = await self._write(key, series, count)
                if limit is not None:
                    limit -= 1
                # Occurrences recorded while the write was in flight stay pending.
                if done and series.count == count:
                    self._dirty.pop(key, None)

    def writable_now(self) -> int:
        """How many event writes the budget allows now: none while the client has requests
        waiting for its own budget (those come first), else what the event bucket holds."""
        if not self._dirty or self.client.rate_limiter.available() < 1:
            return 0
        return min(len(self._dirty), int(self._budget.available()))

    async def run(self) -> None:
        """Flush within budget periodically until cancelled; once more on the way out."""
        try:
            while True:
                await asyncio.sleep(self.flush_interval_seconds)
                allowed = self.writable_now()
                for _ in range(allowed):
                    self._budget.reserve()
                await self.flush(limit=allowed)
                self._log_drops()
        finally:
            if self._dirty:
                try:
                    async with asyncio.timeout(5):
                        await self.flush(limit=self._budget.burst)
                except (TimeoutError, asyncio.CancelledError):
                    self.log.warning("events.unflushed", pending=len(self._dirty))

    def _log_drops(self) -> None:
        dropped = self.stats.dropped - self._dropped_logged
        if dropped:
            self._dropped_logged = self.stats.dropped
            self.log.warning("events.dropped", dropped=dropped, total=self.stats.dropped)

    async def _write(self, key: _SeriesKey, series: _Series, count: int) -> bool:
        """Send one create or series update; False when it must be tried again."""
        try:
            if series.created:
                await self._patch_series(series, count)
                self.stats.series_updates += 1
            else:
                await self._create(key, series, count)
                self.stats.created += 1
                series.created = True
        except NotFound:
            # The event expired on the server (TTL); start a fresh one on the next flush.
            series.created = False
            series.name = _event_name(series.regarding.name)
            return False
        except KubeError as error:
            # Best effort: drop it rather than retry an event forever.
            self.stats.failed += 1
            self.log.warning("events.write_failed", reason=key.reason, error=str(error))
        return True

    async def _create(self, key: _SeriesKey, series: _Series, count: int) -> None:
        event = Event(
            metadata=ObjectMeta(name=series.name, namespace=series.namespace),
            event_time=format_micro_time(utc_now()),
            series=_series_of(series, count),
            reporting_controller=self.reporting_controller,
            reporting_instance=self.reporting_instance,
            action=key.action,
            reason=key.reason,
            note=key.note,
            type=key.type.value,
            regarding=series.regarding,
            related=series.related,
        )
        await self.client.create(EVENTS, event, namespace=series.namespace)

    async def _patch_series(self, series: _Series, count: int) -> None:
        patch = {"series": msgspec.to_builtins(_series_of(series, count))}
        await self.client.patch(
            EVENTS, series.name, patch, patch_type=PatchType.MERGE, namespace=series.namespace
        )


def _series_of(series: _Series, count: int) -> EventSeries | None:
    if count < 2:
        return None
    return EventSeries(count=count, last_observed_time=format_micro_time(series.last_observed))


def _identity(ref: ObjectReference) -> tuple[str, ...]:
    return (ref.api_version, ref.kind, ref.namespace, ref.name, ref.uid)


def _event_name(regarding_name: str) -> str:
    return f"{(regarding_name or 'event')[:200]}.{secrets.token_hex(8)}"


def _truncate(note: str, limit: int) -> str:
    encoded = note.encode()
    if len(encoded) <= limit:
        return note
    return encoded[: limit - 3].decode("utf-8", "ignore") + "..."
