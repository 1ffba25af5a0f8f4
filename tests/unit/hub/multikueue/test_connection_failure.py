"""Failed attempts are told apart by cause, so the Active condition says what to fix."""

from __future__ import annotations

import socket
import ssl

import aiohttp
import pytest

from core.kube.errors import Forbidden, ServerError, TransportError, Unauthorized
from hub.multikueue.connections.connection_failure import FailureKind, classify


def wrapped(cause: BaseException) -> TransportError:
    """A TransportError raised from `cause`, as core.kube's client raises them."""
    try:
        try:
            raise cause
        except BaseException as error:
            raise TransportError("w: GET /apis: failed") from error
    except TransportError as outer:
        return outer


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_refused_connection_names_the_endpoint() -> None:
    port = closed_port()
    async with aiohttp.ClientSession() as session:
        try:
            await session.get(f"http://127.0.0.1:{port}/")
        except aiohttp.ClientError as error:
            failure = classify(wrapped(error))
        else:
            pytest.fail("nothing should listen there")
    assert failure.kind is FailureKind.REFUSED
    assert (failure.host, failure.port) == ("127.0.0.1", port)
    assert f"connection refused by 127.0.0.1:{port}" in failure.message


def test_a_refusal_without_an_endpoint_still_reads_as_one() -> None:
    failure = classify(wrapped(ConnectionRefusedError(111, "Connection refused")))
    assert failure.kind is FailureKind.REFUSED
    assert failure.host is None
    assert "connection refused by the worker" in failure.message


def test_rejected_credentials_say_how_to_renew_them() -> None:
    failure = classify(Unauthorized(401, "Unauthorized", "Unauthorized"))
    assert failure.kind is FailureKind.UNAUTHORIZED
    assert failure.message.startswith("Unauthorized: ")
    assert "fleetq join --rotate" in failure.message


def test_other_api_answers_keep_the_apiserver_message() -> None:
    forbidden = classify(Forbidden(403, "Forbidden", 'workloads is forbidden: user "x"'))
    assert forbidden.kind is FailureKind.FORBIDDEN
    assert forbidden.message == 'Forbidden: workloads is forbidden: user "x"'
    broken = classify(ServerError(500, "InternalError", "etcd down"))
    assert (broken.kind, broken.message) == (FailureKind.OTHER, "InternalError: etcd down")


def test_timeouts_tls_and_names_are_told_apart() -> None:
    assert classify(TimeoutError()).kind is FailureKind.TIMED_OUT
    assert classify(wrapped(TimeoutError())).message == "the worker did not answer in time"
    tls = classify(wrapped(ssl.SSLCertVerificationError("certificate verify failed")))
    assert tls.kind is FailureKind.TLS
    assert "certificate-authority-data" in tls.message
    unresolved = classify(wrapped(socket.gaierror(-2, "Name or service not known")))
    assert unresolved.kind is FailureKind.UNRESOLVED
    assert "Name or service not known" in unresolved.message


def test_a_group_is_described_by_its_first_leaf() -> None:
    group = ExceptionGroup("tasks", [ExceptionGroup("inner", [ValueError("first")]), KeyError()])
    assert classify(group) == classify(ValueError("first"))
    assert classify(group).message == "first"
