"""One worker cluster's connection: client, caches, health, and reconnecting with backoff.

`run()` is a supervisor that lives as long as the worker is configured. Each pass builds a
client from the current kubeconfig, checks every API answers, starts the caches and waits
until they have synced; only then is the worker `connected`. While connected, a cheap
authenticated probe (a one-item list) runs every probe interval, and at once whenever a
cache's watch reports an error, so a dead apiserver, a revoked credential or a partition
is noticed within seconds rather than when a watch would time out. A lost connection is
retried at once, then after 5 s, 10 s, ... 320 s (upstream's schedule, see
reconnect_backoff); a new kubeconfig (`configure`) resets the count and reconnects at once.
Better than upstream, a worker whose apiserver refused connections (it was down) is
watched with a bare TCP connect every `return_poll_seconds` while the attempt waits: once
its port accepts connections again, the count is reset and the next attempt made at once,
and for `RETURN_GRACE_SECONDS` after that, failed attempts (an apiserver that listens but
is still starting) are retried every `return_poll_seconds` rather than on the schedule. So
a worker that returns is served again seconds after it is ready, instead of up to 5 min
20 s later. The condition's next-attempt time stays the latest the attempt will happen.

The connection owns no status: it reports every state change to `on_change` (the cluster
controller turns it into the Active condition) and connects/disconnects to the listener.
`disconnected_since` is the first moment of the current outage (or of the connection's
creation, when it never connected), kept across failed attempts. Switching to a new
kubeconfig is not an outage: `connected` is False while the new client syncs, but
`disconnected_since` stays unset unless that attempt fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import structlog

from core.kube.client import KubeClient
from core.kube.cluster_config import KubeconfigPolicy, from_kubeconfig
from core.kube.errors import ApiError, TooManyRequests, TransportError
from core.kube.micro_time import utc_now
from hub.multikueue.connections.connection_failure import (
    ConnectionFailure,
    FailureKind,
    classify,
)
from hub.multikueue.connections.kubeconfig_source import WorkerKubeconfig
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.remote_caches import RemoteCaches, RemoteKinds, probe
from hub.multikueue.connections.worker_events import (
    WorkerConnected,
    WorkerDisconnected,
    WorkerListener,
)

HEALTH_TICK_SECONDS = 0.5
RETURN_GRACE_SECONDS = 30.0
"""After a refused worker listens again, how long its failed attempts are retried quickly."""


class ConnectionPhase(enum.StrEnum):
    IDLE = "Idle"
    """No kubeconfig given yet."""
    CONNECTING = "Connecting"
    """An attempt is under way (the first, or right after a loss or a new kubeconfig)."""
    CONNECTED = "Connected"
    FAILED = "Failed"
    """The last attempt failed; the next one is due at `next_attempt_at`."""


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Timing and limits of worker connections (upstream's schedule by default)."""

    backoff: ReconnectBackoff = field(default_factory=ReconnectBackoff)
    probe_interval_seconds: float = 5.0
    probe_timeout_seconds: float = 5.0
    sync_timeout_seconds: float = 30.0
    connect_timeout_seconds: float = 10.0
    request_timeout_seconds: float = 30.0
    qps: float = 50.0
    burst: int = 100
    kinds: RemoteKinds = field(default_factory=RemoteKinds)
    return_poll_seconds: float | None = 1.0
    """How often a refused worker's port is tried for its return (None: wait the backoff)."""


@dataclass(frozen=True, slots=True)
class ConnectionState:
    """A snapshot of a connection, what the Active condition is computed from."""

    phase: ConnectionPhase = ConnectionPhase.IDLE
    failed_attempts: int = 0
    last_error: str = ""
    next_attempt_at: datetime | None = None
    disconnected_since: datetime | None = None
    connected_since: datetime | None = None


class WorkerConnection:
    """The hub's link to one worker (see module docstring)."""

    def __init__(
        self,
        name: str,
        origin: str,
        settings: ConnectionSettings,
        *,
        on_change: Callable[[WorkerConnection], None],
        listener: WorkerListener,
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.name = name
        self.origin = origin
        self.settings = settings
        self._on_change = on_change
        self._listener = listener
        self._wall_clock = wall_clock
        self._kubeconfig: WorkerKubeconfig | None = None
        self._configured = asyncio.Event()
        self._reconfigured = asyncio.Event()
        self._returned = False
        self._back_since: float | None = None
        """Loop time at which a refused worker was seen listening again (None: not lately)."""
        self._client: KubeClient | None = None
        self._caches: RemoteCaches | None = None
        self._state = ConnectionState(disconnected_since=wall_clock())
        self.log = structlog.get_logger("hub.multikueue").bind(cluster=name)

    # -- what others read ------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def connected(self) -> bool:
        return self._state.phase is ConnectionPhase.CONNECTED

    @property
    def client(self) -> KubeClient | None:
        """The worker's client while connected (None otherwise)."""
        return self._client if self.connected else None

    @property
    def caches(self) -> RemoteCaches | None:
        """The worker's synced caches while connected (None otherwise)."""
        return self._caches if self.connected else None

    @property
    def disconnected_since(self) -> datetime | None:
        return self._state.disconnected_since

    @property
    def kubeconfig_fingerprint(self) -> str | None:
        return None if self._kubeconfig is None else self._kubeconfig.fingerprint

    # -- what the controller does ----------------------------------------------------

    def configure(self, kubeconfig: WorkerKubeconfig) -> bool:
        """Use this kubeconfig from now on; True when it differs (the client is rebuilt)."""
        if self._kubeconfig is not None and self._kubeconfig.fingerprint == kubeconfig.fingerprint:
            return False
        first = self._kubeconfig is None
        self._kubeconfig = kubeconfig
        self._configured.set()
        if not first:
            self.log.info("multikueue.kubeconfig_changed", source=kubeconfig.source)
            self._reconfigured.set()
        return True

    async def run(self) -> None:
        """Connect, serve, reconnect, until cancelled (then the client is closed)."""
        try:
            while True:
                await self._configured.wait()
                kubeconfig = self._kubeconfig
                assert kubeconfig is not None
                attempts = self._state.failed_attempts
                if self._reconfigured.is_set() or self._returned:
                    self._reconfigured.clear()
                    self._returned = False
                    attempts = 0  # a new kubeconfig or a returned worker: start over
                self._update(
                    phase=ConnectionPhase.CONNECTING, failed_attempts=attempts, next_attempt_at=None
                )
                try:
                    lost = await self._serve(kubeconfig)
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    await self._attempt_failed(classify(error))
                    continue
                if lost is not None:
                    self._lost(lost)
        finally:
            since = self._state.disconnected_since or self._wall_clock()
            self._update(
                phase=ConnectionPhase.IDLE,
                next_attempt_at=None,
                disconnected_since=since,
                connected_since=None,
            )

    # -- one connection --------------------------------------------------------------

    async def _serve(self, kubeconfig: WorkerKubeconfig) -> str | None:
        """Connect and stay connected; the loss's cause, or None for a new kubeconfig."""
        settings = self.settings
        config = await from_kubeconfig(
            kubeconfig.document, name=self.name, policy=KubeconfigPolicy.for_secrets()
        )
        client = KubeClient(
            config,
            qps=settings.qps,
            burst=settings.burst,
            timeout_seconds=settings.request_timeout_seconds,
            connect_timeout_seconds=settings.connect_timeout_seconds,
        )
        try:
            caches = await RemoteCaches.open(
                client,
                self.name,
                self.origin,
                settings.kinds,
                self._listener,
                timeout_seconds=settings.probe_timeout_seconds,
            )
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(informer.run(), name=f"{self.name}-cache")
                    for informer in caches.informers()
                ]
                try:
                    await self._wait_synced(caches)
                    self._client, self._caches = client, caches
                    self._connected()
                    return await self._watch_health(client, caches)
                finally:
                    for task in tasks:
                        task.cancel()
        finally:
            self._client = self._caches = None
            await client.close()

    async def _wait_synced(self, caches: RemoteCaches) -> None:
        timeout = self.settings.sync_timeout_seconds
        try:
            await caches.wait_synced(timeout)
        except TimeoutError:
            raise TransportError(f"remote caches did not sync within {timeout:g}s") from None

    async def _watch_health(self, client: KubeClient, caches: RemoteCaches) -> str | None:
        loop = asyncio.get_running_loop()
        interval = self.settings.probe_interval_seconds
        errors_seen = caches.watch_errors()
        next_probe = loop.time() + interval
        while True:
            tick = max(0.0, min(HEALTH_TICK_SECONDS, next_probe - loop.time()))
            if await _wait_event(self._reconfigured, tick):
                return None
            errors = caches.watch_errors()
            if errors == errors_seen and loop.time() < next_probe:
                continue
            errors_seen = errors
            try:
                await probe(
                    client, self.settings.kinds.workloads, self.settings.probe_timeout_seconds
                )
            except TooManyRequests:
                pass  # throttled, but it answered: still connected
            except (TransportError, ApiError, TimeoutError) as error:
                return describe_failure(error)
            next_probe = loop.time() + interval

    # -- state changes ---------------------------------------------------------------

    def _connected(self) -> None:
        now = self._wall_clock()
        self._back_since = None
        self.log.info("multikueue.worker_connected")
        self._update(
            phase=ConnectionPhase.CONNECTED,
            failed_attempts=0,
            last_error="",
            next_attempt_at=None,
            disconnected_since=None,
            connected_since=now,
        )
        self._listener(WorkerConnected(self.name))

    def _lost(self, cause: str) -> None:
        since = self._state.disconnected_since or self._wall_clock()
        self.log.warning("multikueue.worker_lost", error=cause)
        self._update(
            phase=ConnectionPhase.CONNECTING,
            last_error=cause,
            disconnected_since=since,
            connected_since=None,
        )
        self._listener(WorkerDisconnected(self.name, since, cause))

    async def _attempt_failed(self, failure: ConnectionFailure) -> None:
        cause = failure.message
        attempts = self._state.failed_attempts + 1
        delay = self.settings.backoff.delay(attempts)
        every = self.settings.return_poll_seconds
        now = asyncio.get_running_loop().time()
        if every is not None and self._back_since is not None:
            if now - self._back_since < RETURN_GRACE_SECONDS:
                delay = min(delay, every)  # it is back, and most likely still starting
            else:
                self._back_since = None
        next_at = self._wall_clock() + timedelta(seconds=delay)
        was_connected_before = self._state.connected_since is not None
        since = self._state.disconnected_since or self._wall_clock()
        self.log.warning(
            "multikueue.connect_failed",
            error=cause,
            kind=failure.kind.value,
            attempts=attempts,
            retry_in=delay,
        )
        self._update(
            phase=ConnectionPhase.FAILED,
            failed_attempts=attempts,
            last_error=cause,
            next_attempt_at=next_at,
            disconnected_since=since,
            connected_since=None,
        )
        if was_connected_before:
            self._listener(WorkerDisconnected(self.name, since, cause))
        cut_short = await self._wait_before_retry(failure, delay)
        if cut_short is not None:
            self.log.info("multikueue.retry_now", reason=cut_short)

    async def _wait_before_retry(self, failure: ConnectionFailure, delay: float) -> str | None:
        """Wait `delay`; why the wait was cut short (None if it was not).

        A new kubeconfig always ends it. A refused endpoint is also polled for its return
        (a frozen or partitioned apiserver may accept connections all along, so only a
        refusal is worth watching); once it listens, the next attempt starts the schedule
        over.
        """
        every = self.settings.return_poll_seconds
        watch = failure.kind is FailureKind.REFUSED and failure.host is not None
        if every is None or not watch:
            return "kubeconfig changed" if await _wait_event(self._reconfigured, delay) else None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while (left := deadline - loop.time()) > 0:
            if await _wait_event(self._reconfigured, min(every, left)):
                return "kubeconfig changed"
            if await accepts_connections(failure.host or "", failure.port or 443, timeout=every):
                self._returned = True
                self._back_since = loop.time()
                return "the worker accepts connections again"
        return None

    def _update(self, **changes: object) -> None:
        updated = replace(self._state, **changes)  # type: ignore[arg-type]
        if updated != self._state:
            self._state = updated
            self._on_change(self)


def describe_failure(error: BaseException) -> str:
    """A one-line cause for a failed attempt; the first leaf of an exception group."""
    return classify(error).message


async def accepts_connections(host: str, port: int, *, timeout: float) -> bool:
    """Whether a TCP connection to host:port opens (no TLS, no request: cheap for the worker)."""
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _wait_event(event: asyncio.Event, timeout_seconds: float) -> bool:
    """Wait up to `timeout_seconds` for `event`; whether it is set."""
    if event.is_set():
        return True
    if timeout_seconds <= 0:
        await asyncio.sleep(0)  # always yield, so no caller can spin the loop
        return event.is_set()
    try:
        async with asyncio.timeout(timeout_seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
