"""One open dashboard stream as a browser holds it: what arrived, how much, and when.

The client reads `GET /api/stream?view=...` with a bearer token, splits the server-sent
events itself (a workloads view is one data line of hundreds of kilobytes, longer than
aiohttp's line limit), counts bytes and events, and notes the first moment each awaited
marker (a byte string the change under test puts into the view) shows up in an event.
Markers are searched in the raw bytes, not in parsed JSON: the bench must not spend more
CPU per event than the page would, and its own loop must not delay the timestamps.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import aiohttp


@dataclass
class StreamStats:
    """What one stream received since it opened (or since `reset`)."""

    view: str
    received: int = 0
    events: int = 0
    view_events: int = 0
    keepalives: int = 0
    first_event_at: float | None = None
    awaited: dict[bytes, float] = field(default_factory=dict)
    """Marker → when it was awaited from (monotonic); moved to `seen` when it arrives."""
    seen: dict[bytes, float] = field(default_factory=dict)
    """Marker → latency in seconds from `awaited` to the first event holding it."""
    ended: str = ""

    def reset(self) -> None:
        self.received = self.events = self.view_events = self.keepalives = 0
        self.awaited.clear()
        self.seen.clear()


class DashboardStream:
    """A running stream reader; `start` opens it, `close` ends it."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str, view: str) -> None:
        self._session = session
        self._url = url
        self._token = token
        self.stats = StreamStats(view)
        self.opened = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self, query: dict[str, str]) -> None:
        self._task = asyncio.create_task(self._read(query))

    def await_marker(self, marker: bytes) -> None:
        self.stats.awaited[marker] = time.monotonic()

    async def _read(self, query: dict[str, str]) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with self._session.get(
                self._url, params=query, headers=headers, timeout=aiohttp.ClientTimeout(total=None)
            ) as response:
                if response.status != 200:
                    self.stats.ended = f"HTTP {response.status}: {(await response.text())[:300]}"
                    self.opened.set()
                    return
                buffer = b""
                async for chunk in response.content.iter_any():
                    self.stats.received += len(chunk)
                    buffer += chunk
                    while (cut := buffer.find(b"\n\n")) >= 0:
                        self._event(buffer[:cut])
                        buffer = buffer[cut + 2 :]
                self.stats.ended = "closed by the hub"
        except (aiohttp.ClientError, TimeoutError) as error:
            self.stats.ended = f"{type(error).__name__}: {error}"
        finally:
            self.opened.set()

    def _event(self, chunk: bytes) -> None:
        now = time.monotonic()
        self.stats.events += 1
        if chunk.startswith(b":"):
            self.stats.keepalives += 1
            return
        if not chunk.startswith(b"event: view\n"):
            return
        self.stats.view_events += 1
        if self.stats.first_event_at is None:
            self.stats.first_event_at = now
            self.opened.set()
        for marker, since in list(self.stats.awaited.items()):
            if marker in chunk:
                self.stats.seen[marker] = now - since
                del self.stats.awaited[marker]

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
