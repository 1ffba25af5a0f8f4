"""Typed errors for everything a Kubernetes call can answer, so callers branch on the class.

A controller writes `except Conflict:` to re-read and recompute, `except NotFound:` to treat
an object as gone, and lets anything else propagate. The apiserver's own `Status` message
is kept verbatim (it names the object and the field), because that is what a user can act
on. `error_from_response` is pure: it maps an HTTP status and body to the right class.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec


class KubeError(Exception):
    """Base of every error raised by core.kube."""


class TransportError(KubeError):
    """The apiserver could not be reached or did not answer in time (no HTTP status)."""


class ApiError(KubeError):
    """The apiserver answered with an error status; `message` is its own explanation."""

    status_code: ClassVar[int] = 0

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        method: str = "",
        path: str = "",
        causes: tuple[StatusCause, ...] = (),
        retry_after_seconds: float | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.causes = causes
        self.retry_after_seconds = retry_after_seconds
        where = f"{method} {path}: " if method else ""
        super().__init__(f"{where}HTTP {status} {reason}: {message}")


class BadRequest(ApiError):
    status_code = 400


class Unauthorized(ApiError):
    status_code = 401


class Forbidden(ApiError):
    status_code = 403


class NotFound(ApiError):
    status_code = 404


class MethodNotAllowed(ApiError):
    status_code = 405


class Conflict(ApiError):
    """A write lost an optimistic-concurrency race (stale resourceVersion): re-read, retry."""

    status_code = 409


class AlreadyExists(ApiError):
    """A create found an object of that name (also HTTP 409, but not a lost race)."""

    status_code = 409


class Gone(ApiError):
    """The resourceVersion asked for is too old (compacted); list again from scratch."""

    status_code = 410


class UnsupportedMediaType(ApiError):
    status_code = 415


class Invalid(ApiError):
    """The object failed validation; `causes` names the offending fields."""

    status_code = 422


class TooManyRequests(ApiError):
    """The apiserver is throttling (priority and fairness); honour `retry_after_seconds`."""

    status_code = 429


class ServerError(ApiError):
    """5xx: the apiserver failed or timed out internally; retrying later may succeed."""

    status_code = 500


class StatusCause(msgspec.Struct, frozen=True):
    """One field-level reason inside a Status (e.g. which field was invalid)."""

    reason: str = ""
    message: str = ""
    field: str = ""


class _StatusDetails(msgspec.Struct):
    causes: list[StatusCause] = []
    retry_after_seconds: int | None = msgspec.field(default=None, name="retryAfterSeconds")


class Status(msgspec.Struct):
    """The meta/v1 Status the apiserver returns with errors and in watch ERROR events."""

    code: int = 0
    reason: str = ""
    message: str = ""
    details: _StatusDetails | None = None


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status_code: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        Gone,
        UnsupportedMediaType,
        Invalid,
        TooManyRequests,
    )
}
_STATUS_DECODER = msgspec.json.Decoder(Status)


def decode_status(body: bytes) -> Status:
    """Parse a Status body; a non-Status body (proxy error page) becomes its text."""
    try:
        return _STATUS_DECODER.decode(body)
    except msgspec.DecodeError:
        return Status(message=body[:512].decode("utf-8", "replace").strip())


def error_from_status(
    status: Status,
    *,
    http_status: int | None = None,
    method: str = "",
    path: str = "",
    retry_after: str | None = None,
) -> ApiError:
    """The typed error for an HTTP status (or a Status object's own code)."""
    code = http_status or status.code
    reason = status.reason
    if code == 409 and reason == "AlreadyExists":
        cls: type[ApiError] = AlreadyExists
    elif code >= 500:
        cls = ServerError
    elif code == 410 or reason == "Expired":
        cls = Gone
    else:
        cls = _BY_STATUS.get(code, ApiError)
    details = status.details
    retry_after_seconds = _retry_after(retry_after)
    if retry_after_seconds is None and details is not None and details.retry_after_seconds:
        retry_after_seconds = float(details.retry_after_seconds)
    return cls(
        code,
        reason or _DEFAULT_REASONS.get(code, "Unknown"),
        status.message,
        method=method,
        path=path,
        causes=tuple(details.causes) if details else (),
        retry_after_seconds=retry_after_seconds,
    )


def error_from_response(
    http_status: int,
    body: bytes,
    *,
    method: str = "",
    path: str = "",
    retry_after: str | None = None,
) -> ApiError:
    """The typed error for an error response of the apiserver."""
    return error_from_status(
        decode_status(body),
        http_status=http_status,
        method=method,
        path=path,
        retry_after=retry_after,
    )


def _retry_after(header: str | None) -> float | None:
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        return None


_DEFAULT_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def is_retriable(error: BaseException) -> bool:
    """Whether trying the same call again later can succeed without changing it."""
    return isinstance(error, TransportError | TooManyRequests | ServerError)
