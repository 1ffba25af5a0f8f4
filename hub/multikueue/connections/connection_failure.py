"""Why a connection attempt to a worker failed, in words an operator can act on.

The Active condition of a MultiKueueCluster carries the cause of the last failed attempt.
A raw client error ("ClientConnectorError: Cannot connect to host ... [Connect call
failed ...]") hides what matters: was nothing listening (the apiserver is down), did it
not answer (a partition, an overloaded or frozen apiserver), did TLS or name resolution
fail (a wrong address or CA), or were the credentials refused (an expired or revoked
token)? `classify` walks the exception and its causes and says which, with the endpoint
when known. The kind also decides how to wait: only a refused endpoint is worth watching
for its return (see worker_connection).
"""

from __future__ import annotations

import enum
import socket
import ssl
from dataclasses import dataclass

import aiohttp

from core.kube.errors import ApiError, Forbidden, Unauthorized


class FailureKind(enum.StrEnum):
    REFUSED = "Refused"
    """Nothing listens at the worker's address: its apiserver is down (or the port wrong)."""
    TIMED_OUT = "TimedOut"
    """No answer in time: a partition, or an apiserver too busy or frozen to reply."""
    TLS = "TLS"
    UNRESOLVED = "Unresolved"
    UNAUTHORIZED = "Unauthorized"
    """The worker answered but refused the credentials (expired, revoked, wrong cluster)."""
    FORBIDDEN = "Forbidden"
    OTHER = "Other"


@dataclass(frozen=True, slots=True)
class ConnectionFailure:
    """One failed attempt: its kind, a one-line message, and the endpoint when known."""

    kind: FailureKind
    message: str
    host: str | None = None
    port: int | None = None


def classify(error: BaseException) -> ConnectionFailure:
    """The failure an exception (or the first leaf of an exception group) stands for."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, Unauthorized):
        return ConnectionFailure(
            FailureKind.UNAUTHORIZED,
            f"{error.reason}: {error.message or 'credentials rejected'}; the worker refused "
            "the kubeconfig's credentials (token expired or revoked? `fleetq join --rotate` "
            "mints a new one)",
        )
    if isinstance(error, Forbidden):
        return ConnectionFailure(FailureKind.FORBIDDEN, _api_text(error))
    if isinstance(error, ApiError):
        return ConnectionFailure(FailureKind.OTHER, _api_text(error))
    connector = _connector_error(error)
    host, port = (connector.host, connector.port) if connector is not None else (None, None)
    where = f"{host}:{port}" if host is not None else "the worker"
    if _find(error, aiohttp.ClientConnectorCertificateError, ssl.SSLError) is not None:
        return ConnectionFailure(
            FailureKind.TLS,
            f"TLS handshake with {where} failed: {_leaf_text(error)}; check the kubeconfig's "
            "server address and certificate-authority-data",
            host,
            port,
        )
    if _find(error, ConnectionRefusedError) is not None:
        return ConnectionFailure(
            FailureKind.REFUSED,
            f"connection refused by {where}: the worker's apiserver is not listening",
            host,
            port,
        )
    if _find(error, socket.gaierror) is not None:
        return ConnectionFailure(
            FailureKind.UNRESOLVED, f"cannot resolve {where}: {_leaf_text(error)}", host, port
        )
    if _find(error, TimeoutError) is not None:
        return ConnectionFailure(
            FailureKind.TIMED_OUT, "the worker did not answer in time", host, port
        )
    return ConnectionFailure(FailureKind.OTHER, str(error) or type(error).__name__, host, port)


def _api_text(error: ApiError) -> str:
    return f"{error.reason}: {error.message}" if error.message else str(error)


def _chain(error: BaseException) -> list[BaseException]:
    """The error and its causes (explicit or implicit), outermost first, without loops."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        if isinstance(current, aiohttp.ClientConnectorError):
            found.append(current.os_error)
        current = current.__cause__ or current.__context__
    return found


def _find(error: BaseException, *kinds: type[BaseException]) -> BaseException | None:
    return next((link for link in _chain(error) if isinstance(link, kinds)), None)


def _connector_error(error: BaseException) -> aiohttp.ClientConnectorError | None:
    """The connect-time error, which knows the host and port that were tried."""
    for link in _chain(error):
        if isinstance(link, aiohttp.ClientConnectorError):
            return link
    return None


def _leaf_text(error: BaseException) -> str:
    chain = _chain(error)
    leaf = chain[-1]
    return str(leaf) or type(leaf).__name__
