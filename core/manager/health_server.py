"""Probes and metrics over HTTP: /healthz, /readyz and /metrics.

/healthz answers as long as the event loop does; /readyz only once the replica can take
traffic (every informer has stored its first list, the webhooks serve), and otherwise
says what it still waits for;
/metrics is the Prometheus exposition of `ManagerMetrics`. Health and metrics may share one
application or listen on separate ports, as the hub's configuration says. /metrics may
require delegated authentication and authorization (a `get` on the non-resource path
/metrics, as controller-runtime's secure metrics do) and TLS on a port of its own; the
probes are always open, so kubelet needs no credentials.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from core.manager.metrics import ManagerMetrics

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
PROBE_PATHS = frozenset({HEALTH_PATH, READY_PATH})
"""Always answered without authentication, even when /metrics requires it."""


def probe_routes(app: web.Application, not_ready_reason: Callable[[], str | None]) -> None:
    """`not_ready_reason` answers None when ready, else what readiness waits for."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        reason = not_ready_reason()
        if reason is None:
            return web.Response(text="ok")
        return web.Response(status=503, text=reason)

    app.router.add_get(HEALTH_PATH, healthz)
    app.router.add_get(READY_PATH, readyz)


def metrics_routes(app: web.Application, metrics: ManagerMetrics) -> None:
    async def scrape(_: web.Request) -> web.Response:
        response = web.Response(body=metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app.router.add_get(METRICS_PATH, scrape)


async def serve(
    app: web.Application, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None
) -> web.AppRunner:
    """Start serving `app` (over TLS with `ssl_context`); the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    # "All interfaces" on an OS-picked port would give each address family its own port.
    site = web.TCPSite(
        runner, host or ("0.0.0.0" if port == 0 else None), port, ssl_context=ssl_context
    )
    await site.start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    """The port a runner listens on (for port 0, the one the OS picked)."""
    for address in runner.addresses:
        if isinstance(address, tuple):
            return int(address[1])
    raise RuntimeError("the server is not listening on a TCP port")
