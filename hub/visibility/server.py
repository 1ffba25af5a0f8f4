"""The HTTP face of the visibility API: upstream's paths on an aiohttp application.

`create_app` returns a plain `web.Application`; where it listens and with which TLS
settings is the caller's choice. Authentication and authorization (delegated to the
cluster, as upstream's aggregated server does) plug in through `middlewares`: they run
after the error renderer and before every handler, `/healthz` included (a hook that must
let health probes through can compare `request.path` with `HEALTH_PATH`). Any HTTP error a
hook or the router raises reaches the client as a meta/v1 Status, like every other failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from hub.visibility.discovery import api_group, api_group_list, api_resource_list
from hub.visibility.group import GROUP, PENDING_WORKLOADS, QueueResource, VisibilityVersion
from hub.visibility.query import parse_options
from hub.visibility.source import PendingWorkloadsSource
from hub.visibility.status import Status, status_for_code
from hub.visibility.summary import cluster_queue_summary, local_queue_summary

HEALTH_PATH = "/healthz"
JSON = "application/json"
GROUP_PATH = f"/apis/{GROUP}"
_VERSION = "{version:" + "|".join(v.value for v in VisibilityVersion) + "}"
VERSION_PATH = f"{GROUP_PATH}/{_VERSION}"
CLUSTER_QUEUE_PATH = (
    f"{VERSION_PATH}/{QueueResource.CLUSTER_QUEUE.plural}/{{name}}/{PENDING_WORKLOADS}"
)
LOCAL_QUEUE_PATH = (
    f"{VERSION_PATH}/namespaces/{{namespace}}/"
    f"{QueueResource.LOCAL_QUEUE.plural}/{{name}}/{PENDING_WORKLOADS}"
)

SOURCE_KEY = web.AppKey("visibility_source", PendingWorkloadsSource)

_log = structlog.get_logger("hub.visibility")
_encoder = msgspec.json.Encoder()


def _json(document: msgspec.Struct, status: int = 200) -> web.Response:
    return web.Response(body=_encoder.encode(document), status=status, content_type=JSON)


def _answer(document: msgspec.Struct) -> web.Response:
    """200 with the document, or the Status's own code when the document is a failure."""
    if isinstance(document, Status):
        return _json(document, document.code)
    return _json(document)


@web.middleware
async def _errors_as_status(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Render router and hook failures (404, 405, 401, 403, crashes) as Status JSON."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = exc.text if exc.text and exc.content_type != "text/html" else exc.reason
        if exc.status == 404:
            message = "the server could not find the requested resource"
        elif exc.status == 405:
            message = "the server does not allow this method on the requested resource"
        response = _json(status_for_code(exc.status, message), exc.status)
        for name in ("Allow", "WWW-Authenticate", "Retry-After"):
            if name in exc.headers:
                response.headers[name] = exc.headers[name]
        return response
    except Exception:
        _log.exception("visibility_request_failed", method=request.method, path=request.path)
        return _json(status_for_code(500, "internal error while serving the request"), 500)


def _version(request: web.Request) -> VisibilityVersion:
    return VisibilityVersion(request.match_info["version"])


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok", content_type="text/plain")


async def _apis(request: web.Request) -> web.Response:
    return _json(api_group_list())


async def _group(request: web.Request) -> web.Response:
    return _json(api_group())


async def _resources(request: web.Request) -> web.Response:
    return _json(api_resource_list(_version(request)))


async def _cluster_queue(request: web.Request) -> web.Response:
    options = parse_options(request.query)
    if isinstance(options, Status):
        return _answer(options)
    source = request.app[SOURCE_KEY]
    name = request.match_info["name"]
    return _answer(cluster_queue_summary(source, name, options, _version(request)))


async def _local_queue(request: web.Request) -> web.Response:
    options = parse_options(request.query)
    if isinstance(options, Status):
        return _answer(options)
    source = request.app[SOURCE_KEY]
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    return _answer(local_queue_summary(source, namespace, name, options, _version(request)))


def create_app(
    source: PendingWorkloadsSource, *, middlewares: Sequence[Middleware] = ()
) -> web.Application:
    """An application serving the visibility API from `source`.

    `middlewares` (decorated with `@web.middleware`) are the authn/authz seam; they see
    each request before its handler and may raise `web.HTTPUnauthorized`/`HTTPForbidden`.
    """
    app = web.Application(middlewares=[_errors_as_status, *middlewares])
    app[SOURCE_KEY] = source
    app.router.add_get(HEALTH_PATH, _healthz)
    app.router.add_get("/apis", _apis)
    app.router.add_get(GROUP_PATH, _group)
    app.router.add_get(VERSION_PATH, _resources)
    app.router.add_get(CLUSTER_QUEUE_PATH, _cluster_queue)
    app.router.add_get(LOCAL_QUEUE_PATH, _local_queue)
    return app
