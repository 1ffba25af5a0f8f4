"""A worker connection against a loopback port nobody listens on: real refusals, real timing."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.manager.webhook_certs import issue
from hub.multikueue.connections.kubeconfig_file_watch import KubeconfigFileWatch
from hub.multikueue.connections.kubeconfig_source import WorkerKubeconfig
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.worker_connection import (
    ConnectionPhase,
    ConnectionSettings,
    ConnectionState,
    WorkerConnection,
    describe_failure,
)
from hub.multikueue.connections.worker_events import WorkerEvent

CREATED = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def kubeconfig(port: int, token: str = "t") -> WorkerKubeconfig:
    ca = base64.b64encode(issue(["127.0.0.1"], CREATED).ca_cert).decode()
    document = {
        "current-context": "w",
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "w"}}],
        "clusters": [
            {
                "name": "w",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority-data": ca,
                },
            }
        ],
        "users": [{"name": "w", "user": {"token": token}}],
    }
    return WorkerKubeconfig(document, f"{port}-{token}", "test")


class Recorder:
    def __init__(self) -> None:
        self.states: list[tuple[float, ConnectionState]] = []
        self.events: list[WorkerEvent] = []

    def on_change(self, connection: WorkerConnection) -> None:
        self.states.append((time.monotonic(), connection.state))

    def failures(self) -> list[tuple[float, ConnectionState]]:
        return [(t, s) for t, s in self.states if s.phase is ConnectionPhase.FAILED]


async def wait_until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.01)


def connection_for(recorder: Recorder, base: float) -> WorkerConnection:
    return WorkerConnection(
        "w",
        "multikueue",
        ConnectionSettings(backoff=ReconnectBackoff(base_seconds=base), connect_timeout_seconds=2),
        on_change=recorder.on_change,
        listener=recorder.events.append,
        wall_clock=lambda: datetime.now(UTC),
    )


async def test_a_refused_worker_is_retried_on_the_backoff_schedule() -> None:
    recorder = Recorder()
    connection = connection_for(recorder, base=0.1)
    created = connection.disconnected_since
    assert connection.state.phase is ConnectionPhase.IDLE and created is not None
    connection.configure(kubeconfig(closed_port()))
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: len(recorder.failures()) >= 4)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    failures = recorder.failures()[:4]
    assert [s.failed_attempts for _, s in failures] == [1, 2, 3, 4]
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(failures)]
    for gap, expected in zip(gaps, (0.1, 0.2, 0.4), strict=True):
        assert expected <= gap < expected + 1.5  # lower bound is the point; CI may be slow
    for _, state in failures:
        assert state.disconnected_since == created  # the outage dates from the start
        assert "Cannot connect" in state.last_error or "refused" in state.last_error.lower()
        assert state.next_attempt_at is not None
    assert connection.client is None and connection.caches is None
    assert recorder.events == []  # never connected: nothing to announce
    assert connection.state.phase is ConnectionPhase.IDLE


async def test_a_new_kubeconfig_resets_the_count_and_retries_at_once() -> None:
    recorder = Recorder()
    connection = connection_for(recorder, base=5.0)
    first = kubeconfig(closed_port(), "a")
    assert connection.configure(first)
    assert not connection.configure(first)  # same content: nothing to rebuild
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: len(recorder.failures()) >= 1)
        started = time.monotonic()
        assert connection.configure(kubeconfig(closed_port(), "b"))
        await wait_until(lambda: len(recorder.failures()) >= 2)
        assert time.monotonic() - started < 2.0  # not the 5 s backoff
        assert recorder.failures()[1][1].failed_attempts == 1
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_failures_are_described_by_their_first_cause() -> None:
    group = ExceptionGroup("tasks", [ValueError("first"), KeyError("second")])
    assert describe_failure(group) == "first"
    assert describe_failure(TimeoutError()) == "the worker did not answer in time"


@pytest.mark.parametrize("rewrite", ["content", "replace"])
async def test_a_changed_kubeconfig_file_is_reported(tmp_path: Path, rewrite: str) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("a: 1\n")
    watch = KubeconfigFileWatch(interval_seconds=0.02)
    changed: list[str] = []
    watch.track("w", str(path))
    task = asyncio.create_task(watch.run(changed.append))
    try:
        await wait_until(lambda: changed == ["w"])  # first sight is reported once
        await asyncio.sleep(0.1)
        assert changed == ["w"]
        if rewrite == "content":
            path.write_text("a: 22\n")
        else:
            replacement = tmp_path / "new.yaml"
            replacement.write_text("a: 1\n")
            replacement.replace(path)
        await wait_until(lambda: changed == ["w", "w"])
        watch.forget("w")
        path.write_text("a: 333\n")
        await asyncio.sleep(0.1)
        assert changed == ["w", "w"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Listener:
    """A bare TCP listener on a chosen port that accepts and hangs up (not an apiserver)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Listener:
        async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        self.server = await asyncio.start_server(hang_up, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


def returning_connection(recorder: Recorder, poll: float | None) -> WorkerConnection:
    settings = ConnectionSettings(
        backoff=ReconnectBackoff(base_seconds=5.0),
        connect_timeout_seconds=2,
        probe_timeout_seconds=1,
        return_poll_seconds=poll,
    )
    return WorkerConnection(
        "w",
        "multikueue",
        settings,
        on_change=recorder.on_change,
        listener=recorder.events.append,
        wall_clock=lambda: datetime.now(UTC),
    )


async def test_a_refused_worker_that_listens_again_is_retried_at_once() -> None:
    recorder = Recorder()
    connection = returning_connection(recorder, poll=0.2)
    port = closed_port()
    connection.configure(kubeconfig(port))
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: len(recorder.failures()) >= 1)
        first = recorder.failures()[0][1]
        assert first.failed_attempts == 1
        assert f"connection refused by 127.0.0.1:{port}" in first.last_error
        async with Listener(port):
            back = time.monotonic()
            await wait_until(lambda: len(recorder.failures()) >= 3, timeout=4.0)
        (second_at, second), (third_at, third) = recorder.failures()[1:3]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert second_at - back < 2.0  # within a poll or two, not the 5 s backoff
    assert second.failed_attempts == 1  # the schedule started over
    assert "refused" not in second.last_error  # it listened, but is no apiserver
    # Still failing right after its return (starting up): retried at the poll, not 5 s.
    assert third_at - second_at < 2.0
    assert third.failed_attempts == 2


async def test_without_polling_a_refused_worker_waits_for_the_backoff() -> None:
    recorder = Recorder()
    connection = returning_connection(recorder, poll=None)
    port = closed_port()
    connection.configure(kubeconfig(port))
    task = asyncio.create_task(connection.run())
    try:
        await wait_until(lambda: len(recorder.failures()) >= 1)
        async with Listener(port):
            await asyncio.sleep(1.5)
            assert len(recorder.failures()) == 1
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
