"""HTTP answers map to typed errors carrying the apiserver's own message."""

from __future__ import annotations

import json

import pytest

from core.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    error_from_response,
    is_retriable,
)


def status(code: int, reason: str, message: str, **details: object) -> bytes:
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (504, "Timeout", ServerError),
        (418, "Teapot", ApiError),
    ],
)
def test_status_codes_map_to_their_error_class(
    code: int, reason: str, expected: type[ApiError]
) -> None:
    error = error_from_response(code, status(code, reason, "told you so"), method="GET", path="/x")
    assert type(error) is expected
    assert error.status == code
    assert error.reason == reason
    assert error.message == "told you so"
    assert "GET /x" in str(error) and "told you so" in str(error)


def test_a_lost_race_is_a_conflict_but_a_taken_name_is_not() -> None:
    lost = error_from_response(409, status(409, "Conflict", "the object has been modified"))
    taken = error_from_response(409, status(409, "AlreadyExists", 'configmaps "x" already exists'))
    assert isinstance(lost, Conflict)
    assert not isinstance(taken, Conflict)


def test_invalid_keeps_the_field_causes() -> None:
    body = status(
        422,
        "Invalid",
        'ConfigMap "Bad" is invalid: metadata.name: Invalid value',
        causes=[
            {"reason": "FieldValueInvalid", "message": "Invalid value", "field": "metadata.name"}
        ],
    )
    error = error_from_response(422, body)
    assert isinstance(error, Invalid)
    assert [cause.field for cause in error.causes] == ["metadata.name"]


def test_throttling_carries_retry_after_from_header_or_details() -> None:
    from_header = error_from_response(
        429, status(429, "TooManyRequests", "slow down"), retry_after="3"
    )
    from_details = error_from_response(
        429, status(429, "TooManyRequests", "slow down", retryAfterSeconds=7)
    )
    assert from_header.retry_after_seconds == 3.0
    assert from_details.retry_after_seconds == 7.0


def test_an_expired_status_inside_a_200_watch_stream_is_gone() -> None:
    # Watch ERROR events carry the Status with code 410 and reason Expired.
    error = error_from_response(0, status(410, "Expired", "too old resource version: 1 (42)"))
    assert isinstance(error, Gone)
    assert "too old resource version" in error.message


def test_a_non_status_body_still_gives_a_readable_error() -> None:
    error = error_from_response(502, b"<html>Bad Gateway</html>")
    assert isinstance(error, ServerError)
    assert "Bad Gateway" in error.message


def test_only_transient_failures_are_retriable() -> None:
    assert is_retriable(TransportError("connection refused"))
    assert is_retriable(error_from_response(429, status(429, "TooManyRequests", "")))
    assert is_retriable(error_from_response(503, status(503, "ServiceUnavailable", "")))
    assert not is_retriable(error_from_response(404, status(404, "NotFound", "")))
    assert not is_retriable(error_from_response(409, status(409, "Conflict", "")))
