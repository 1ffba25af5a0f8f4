"""`fleetq dashboard`: open the hub's dashboard through a local proxy that adds your token.

The hub serves the dashboard (`--dashboard-port`, the chart's `dashboard.enabled`) and
accepts only bearer tokens. This command listens on 127.0.0.1 and forwards every request
to `--url`, adding `Authorization: Bearer <token>` from `--token-file` or the kubeconfig's
user token, so the browser never holds the token and nothing needs a port-forward when
the hub's address is reachable (an Ingress, a LoadBalancer, or a local fleet's hub).
Without a token it forwards nothing extra and the page asks for one.

The proxy is for this machine only: it refuses requests whose Host is not its own
loopback address (DNS rebinding) and writes from any page but its own (the Origin header
is checked here and rewritten for the hub, which checks it again, with the CSRF token).
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FORWARDED_REQUEST = ("Content-Type", "X-CSRF-Token", "Accept")
_FORWARDED_RESPONSE = (
    "Content-Type",
    "Cache-Control",
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Referrer-Policy",
)


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "dashboard",
        help="open the hub's fleet dashboard through a local proxy that adds your token",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", required=True, help="the hub's dashboard URL (http[s]://...)")
    parser.add_argument(
        "--token-file", type=Path, help="file holding a bearer token (default: the kubeconfig's)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig to read a user token from")
    parser.add_argument("--port", type=int, default=0, help="local port (default: any free)")
    parser.add_argument("--ca-file", type=Path, help="CA bundle of the hub's dashboard certificate")
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    parser.set_defaults(handler=run_dashboard)


def kubeconfig_token(path: Path | None) -> str | None:
    """The current context's user token, if the kubeconfig has one (not certificates)."""
    import os

    import yaml

    candidates = (
        [path] if path else [Path(p) for p in os.environ.get("KUBECONFIG", "").split(":") if p]
    )
    if not candidates:
        candidates = [Path.home() / ".kube" / "config"]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        config = yaml.safe_load(candidate.read_text()) or {}
        context_name = config.get("current-context")
        context = next(
            (
                c.get("context") or {}
                for c in config.get("contexts") or ()
                if c.get("name") == context_name
            ),
            {},
        )
        user = next(
            (
                u.get("user") or {}
                for u in config.get("users") or ()
                if u.get("name") == context.get("user")
            ),
            {},
        )
        if user.get("token"):
            return str(user["token"])
        if user.get("tokenFile"):
            return Path(user["tokenFile"]).read_text().strip()
    return None


def run_dashboard(args: argparse.Namespace) -> int:
    token = (
        args.token_file.read_text().strip()
        if args.token_file
        else kubeconfig_token(args.kubeconfig)
    )
    if token is None:
        print("fleetq dashboard: no token found; the page will ask for one", file=sys.stderr)
    try:
        return asyncio.run(_serve(args, token))
    except KeyboardInterrupt:
        return 0


async def _serve(args: argparse.Namespace, token: str | None) -> int:
    from aiohttp import web

    tls: ssl.SSLContext | bool = True
    if args.ca_file is not None:
        tls = ssl.create_default_context(cafile=str(args.ca_file))
    address = LocalAddress()
    runner = web.AppRunner(proxy_app(args.url, token, tls, address), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = runner.addresses[0][1]
    address.host = f"127.0.0.1:{port}"
    url = f"http://127.0.0.1:{port}/"
    print(f"fleetq dashboard: {url} (proxying {args.url})", flush=True)
    if args.open:
        webbrowser.open(url)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
    return 0


@dataclass
class LocalAddress:
    """Where the proxy listens (`host:port`), known once it has started."""

    host: str = ""

    def allowed(self, host: str) -> bool:
        return bool(self.host) and host in {self.host, self.host.replace("127.0.0.1", "localhost")}


def proxy_app(
    upstream: str, token: str | None, tls: ssl.SSLContext | bool, address: LocalAddress
) -> Any:
    """The proxy application (see module docstring)."""
    import aiohttp
    from aiohttp import web

    session_key = web.AppKey("session", aiohttp.ClientSession)
    base = upstream.rstrip("/")
    upstream_origin = "/".join(base.split("/")[:3])

    async def forward(request: web.Request) -> web.StreamResponse:
        if not address.allowed(request.host):
            return web.Response(status=421, text="this proxy only answers its own address")
        if request.method != "GET":
            origin = request.headers.get("Origin")
            if origin != f"http://{request.host}":
                return web.Response(status=403, text="writes only from the dashboard's own page")
        headers = {k: request.headers[k] for k in _FORWARDED_REQUEST if k in request.headers}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif "Authorization" in request.headers:
            headers["Authorization"] = request.headers["Authorization"]
        if request.method != "GET":
            headers["Origin"] = upstream_origin
        session = request.app[session_key]
        async with session.request(
            request.method,
            base + request.rel_url.path_qs,
            headers=headers,
            data=await request.read() if request.can_read_body else None,
            ssl=tls,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        ) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers={k: answer.headers[k] for k in _FORWARDED_RESPONSE if k in answer.headers},
            )
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def session_context(app: web.Application) -> Any:
        app[session_key] = aiohttp.ClientSession(auto_decompress=False)
        yield
        await app[session_key].close()

    app = web.Application()
    app.cleanup_ctx.append(session_context)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app
