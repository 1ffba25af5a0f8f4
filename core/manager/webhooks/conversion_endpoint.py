"""The `/convert` route: ConversionReviews from the apiserver, answered by
`core.api.conversion.review`.

A body that is not a ConversionReview request gets HTTP 400 with a meta/v1 Status (no
uid to answer to); an object that cannot be converted gets a Failure result naming it,
which the apiserver returns to the client; a bug inside the conversion is logged and
answered as a Failure too, so the server keeps serving.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
import structlog
from aiohttp import web

from core.api.conversion.review import BadConversionReview, convert_review

JSON = "application/json"

_log = structlog.get_logger("core.manager.webhooks.conversion")


def _bad_request(message: str) -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "BadRequest",
        "code": 400,
        "message": message,
    }
    return web.Response(body=orjson.dumps(status), status=400, content_type=JSON)


def _failure(review: dict[str, object], message: str) -> dict[str, object]:
    request = review.get("request")
    uid = request.get("uid", "") if isinstance(request, dict) else ""
    return {
        "apiVersion": review.get("apiVersion") or "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": uid,
            "convertedObjects": [],
            "result": {"status": "Failure", "message": message},
        },
    }


def conversion_endpoint(max_body_bytes: int) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def convert(request: web.Request) -> web.Response:
        if request.content_type != JSON:
            return _bad_request(
                f"Content-Type must be {JSON}, got {request.content_type or 'none'}"
            )
        try:
            review = orjson.loads(await request.read())
        except web.HTTPRequestEntityTooLarge:
            return _bad_request(f"body larger than {max_body_bytes} bytes")
        except orjson.JSONDecodeError as error:
            return _bad_request(f"body is not JSON: {error}")
        if not isinstance(review, dict):
            return _bad_request("expected a ConversionReview object")
        try:
            answer = convert_review(review)
        except BadConversionReview as error:
            _log.info("conversion.bad_request", reason=str(error))
            return _bad_request(str(error))
        except Exception as error:
            _log.exception("conversion.failed")
            answer = _failure(review, f"internal error converting: {type(error).__name__}: {error}")
        result = answer["response"]["result"]
        if result["status"] != "Success":
            _log.info("conversion.refused", message=result.get("message"))
        return web.Response(body=orjson.dumps(answer), content_type=JSON)

    return convert
