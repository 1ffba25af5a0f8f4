"""meta/v1 Status failures, shaped as a Kubernetes API server sends them.

Clients (kubectl, client-go) turn these into typed errors by `reason` and `code`, so a
missing queue must read `NotFound`/404 and a bad query `BadRequest`/400, exactly as
upstream's aggregated server answers.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from hub.visibility.group import GROUP, QueueResource


class StatusReason(StrEnum):
    BAD_REQUEST = "BadRequest"
    NOT_FOUND = "NotFound"
    METHOD_NOT_ALLOWED = "MethodNotAllowed"
    UNAUTHORIZED = "Unauthorized"
    FORBIDDEN = "Forbidden"
    INTERNAL_ERROR = "InternalError"
    UNKNOWN = ""


_REASON_BY_CODE = {
    400: StatusReason.BAD_REQUEST,
    401: StatusReason.UNAUTHORIZED,
    403: StatusReason.FORBIDDEN,
    404: StatusReason.NOT_FOUND,
    405: StatusReason.METHOD_NOT_ALLOWED,
    500: StatusReason.INTERNAL_ERROR,
}


class StatusDetails(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """Which object the failure is about (omitted fields are unknown)."""

    name: str = ""
    group: str = ""
    kind: str = ""


class Status(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    """A failed request's answer; `code` is also the HTTP status."""

    kind: str = "Status"
    api_version: str = "v1"
    metadata: dict[str, str] = {}
    status: str = "Failure"
    message: str
    reason: StatusReason
    details: StatusDetails | msgspec.UnsetType = msgspec.UNSET
    code: int


def bad_request(message: str) -> Status:
    return Status(message=message, reason=StatusReason.BAD_REQUEST, code=400)


def queue_not_found(resource: QueueResource, name: str) -> Status:
    """The queue named in the path is unknown (for a LocalQueue: in that namespace)."""
    return Status(
        message=f'{resource.value}.{GROUP} "{name}" not found',
        reason=StatusReason.NOT_FOUND,
        details=StatusDetails(name=name, group=GROUP, kind=resource.value),
        code=404,
    )


def status_for_code(code: int, message: str) -> Status:
    """A Status for an HTTP failure raised outside the API handlers (routing, auth hooks)."""
    return Status(
        message=message, reason=_REASON_BY_CODE.get(code, StatusReason.UNKNOWN), code=code
    )
