"""A TCP relay from a worker's control-plane address (127.0.0.x:6443) to its apiserver.

kwokctl keeps each apiserver on 127.0.0.1 at a port of its own, and its components reach
it there, so the apiserver cannot move to the address upstream's MultiKueue suites name
(`<cluster>-control-plane:6443`, devfleet.kind_names). The relay listens at that address
and copies bytes both ways, as docker's port publishing does for a kind node: TLS is
between the client and the real apiserver, whose serving certificate carries the
control-plane name, so nothing is terminated, read or trusted here.

It runs on an event loop in a daemon thread of the process that starts it (the
conformance runner), so it lives exactly as long as the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from dataclasses import dataclass

COPY_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class LoopbackRelay:
    """Relays every connection to `listen` onto `target` until `stop()`."""

    def __init__(self, listen: Endpoint, target: Endpoint) -> None:
        self.listen = listen
        self.target = target
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self.bound_address: tuple[str, int] = (listen.host, listen.port)
        """Where it listens (port 0 in `listen`: the port the system chose)."""

    def start(self) -> None:
        """Bind now (an address in use fails here, in the caller), then serve in a thread."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.listen.host, self.listen.port))
        except OSError:
            sock.close()
            raise
        sock.listen(128)
        self.bound_address = sock.getsockname()[:2]
        sock.setblocking(False)

        async def serve() -> None:
            self._server = await asyncio.start_server(self._relay, sock=sock)

        self._loop.run_until_complete(serve())
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"relay {self.listen}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            current = asyncio.current_task()
            # A connection accepted while closing starts a task after the first look:
            # look again until none is left, so no relay task outlives the loop.
            for _ in range(5):
                open_connections = [t for t in asyncio.all_tasks() if t is not current]
                if not open_connections:
                    break
                for task in open_connections:
                    task.cancel()
                await asyncio.gather(*open_connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._thread = None

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(self.target.host, self.target.port), 10.0
            )
        except (OSError, TimeoutError):
            writer.close()
            return
        with contextlib.suppress(asyncio.CancelledError):  # stop(): the relay is closing
            await asyncio.gather(
                _copy(reader, upstream_writer),
                _copy(upstream_reader, writer),
                return_exceptions=True,
            )
        for side in (writer, upstream_writer):
            with contextlib.suppress(Exception):
                side.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then half-close the other side (the answer may still
    be on its way); a reset on either side ends both."""
    try:
        while chunk := await reader.read(COPY_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()
