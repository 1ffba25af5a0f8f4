"""The dashboard's HTTP server: static pages, JSON views, live event streams, actions.

- `/`, `/static/*`, `/healthz`: open (the page holds no data; it asks for a token).
- `GET /api/session`: who the caller is, a CSRF token, which actions RBAC allows.
- `GET /api/views/<view>`: one view's JSON, after the view's SubjectAccessReview.
- `GET /api/workload/{events,logs,priority}?namespace=&name=`: what the workload detail
  reads on demand (Events, pod log tails, the priority classes it may take), each after
  the Workload's own `get` and the part's SubjectAccessReview; at most
  `DETAIL_READS` at once, so the page cannot flood the apiservers.
- `GET /api/stream?view=`: the same view as server-sent events, pushed whenever it
  changes: woken by the source's `changes` and `coalesce_seconds` later (so a burst of
  changes is one build), or on the tick for views showing durations, else checked every
  `push_seconds`; one build per change for every stream and request of the view,
  `streams.SharedViews`); the caller's token and access are checked
  again every `recheck_seconds`, so an expired token or a revoked RoleBinding ends the
  stream; at most `StreamLimiter.per_user` streams per user.
- `POST /api/actions/<action>`: only from the dashboard's own origin, with the CSRF
  token, after a SubjectAccessReview for `patch` on the object.
Credentials come in the Authorization header only (never a query string), and nothing
here logs headers. Every response forbids framing and caching of data.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import orjson
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler

from core.api.workload import Workload
from core.kube.errors import KubeError
from hub.dashboard.access import (
    SESSION_ACTIONS,
    Action,
    DashboardAuth,
    action_attributes,
    events_attributes,
    logs_attributes,
    patch_attributes,
    view_attributes,
)
from hub.dashboard.actions import DashboardActions
from hub.dashboard.change_signal import ChangeSignal
from hub.dashboard.csrf import CSRF_HEADER, CsrfTokens
from hub.dashboard.history import FleetHistory, HistorySampler
from hub.dashboard.priority_change import PriorityNotChangeable, PriorityTarget, priority_target
from hub.dashboard.source import DashboardSource, ViewInput
from hub.dashboard.streams import (
    BUILD_SPACING,
    BuiltView,
    SharedViews,
    StreamLimiter,
    TooManyStreams,
    ViewKey,
)
from hub.dashboard.views import (
    VIEWS,
    decoded_workload,
    flavors_view,
    fleet_view,
    queues_view,
    workload_view,
    workloads_view,
)
from hub.dashboard.workload_reads import WorkloadReads, owner_job
from hub.dashboard.workload_rows import WorkloadRows
from hub.visibility.authentication import UserInfo
from hub.visibility.authorization import ResourceAttributes

HEALTH_PATH = "/healthz"
_STATIC = resources.files("hub.dashboard") / "static"
_STATIC_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_USER = web.RequestKey("dashboard_user", UserInfo)
_HIDE_LATENCY = web.RequestKey("dashboard_hide_latency", bool)
DETAIL_READS = 4
"""Workload detail reads (Events, logs) served at once; more wait their turn."""
COALESCE_SECONDS = 0.075
"""How long a stream woken by a change waits for more before it asks for its view: the
changes of one write (a Workload and the queue status it moves) make one build."""
_AFTER_TICK = 0.01
"""Seconds past a tick a timed view's stream wakes, so the tick has moved its stamp."""
_log = structlog.get_logger("hub.dashboard")


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(body),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message, "code": status}, status)


def _credentials(request: web.Request, user: UserInfo) -> str:
    return request.headers.get("Authorization") or f"user:{user.name}:{user.uid}"


class Dashboard:
    """The dashboard application (see module docstring)."""

    def __init__(
        self,
        source: DashboardSource,
        auth: DashboardAuth,
        actions: DashboardActions,
        *,
        reads: WorkloadReads | None = None,
        sampler: HistorySampler | None = None,
        limiter: StreamLimiter | None = None,
        push_seconds: float = 0.5,
        recheck_seconds: float = 30.0,
        keepalive_seconds: float = 15.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        version: Callable[[Iterable[ViewInput]], Hashable] | None = None,
        changes: ChangeSignal | None = None,
        coalesce_seconds: float = COALESCE_SECONDS,
    ) -> None:
        """`version` says whether a view's inputs moved (`HubSource.version`); `changes`
        wakes the streams when they may have (`HubSource.changes`; used with `version`
        only). Without them the streams look every `push_seconds`."""
        self.source = source
        self.auth = auth
        self.actions = actions
        self.reads = reads
        self.sampler = sampler
        self.history = sampler.history if sampler is not None else FleetHistory(capacity=1)
        self._detail_reads = asyncio.Semaphore(DETAIL_READS)
        self.limiter = limiter or StreamLimiter()
        self.csrf = CsrfTokens()
        self.push_seconds = push_seconds
        self.recheck_seconds = recheck_seconds
        self.keepalive_seconds = keepalive_seconds
        self.now = now
        self.changes = changes if version is not None else None
        self.coalesce_seconds = coalesce_seconds
        self.rows = WorkloadRows()
        """The Workloads' rows, kept between builds of the workloads and fleet views."""
        self.views = SharedViews(
            lambda key: self._build(*key),
            version=version,
            min_interval=push_seconds if self.changes is None else coalesce_seconds,
            spacing=BUILD_SPACING,
        )

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._headers, self._authenticate])
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{file}", self._static)
        app.router.add_get(HEALTH_PATH, self._health)
        app.router.add_get("/api/session", self._session)
        app.router.add_get("/api/views/{view}", self._view)
        app.router.add_get("/api/stream", self._stream)
        app.router.add_get("/api/workload/events", self._workload_events)
        app.router.add_get("/api/workload/logs", self._workload_logs)
        app.router.add_get("/api/workload/priority", self._workload_priority)
        app.router.add_post("/api/actions/{action}", self._action)
        if self.sampler is not None:
            app.cleanup_ctx.append(self._sampling)
        if self.changes is not None:
            app.cleanup_ctx.append(self._following_changes)
        return app

    async def _sampling(self, app: web.Application) -> AsyncIterator[None]:
        """Sample the history while the server runs (first sample right away)."""
        assert self.sampler is not None
        task = asyncio.create_task(self.sampler.run(), name="dashboard-history")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _following_changes(self, app: web.Application) -> AsyncIterator[None]:
        """Sample what has no events (the workers) while the server runs."""
        assert self.changes is not None
        task = asyncio.create_task(self.changes.sample(), name="dashboard-changes")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    # -- middlewares -------------------------------------------------------------------
    @web.middleware
    async def _headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith("/api/"):
            return await handler(request)
        if "token" in request.query or "access_token" in request.query:
            return _error(400, "credentials go in the Authorization header, never in the URL")
        user = await self.auth.authenticate(request)
        if user is None:
            return _error(401, "Unauthorized: send a valid bearer token")
        request[_USER] = user
        return await handler(request)

    # -- open pages --------------------------------------------------------------------
    async def _index(self, request: web.Request) -> web.StreamResponse:
        return self._file("index.html")

    async def _static(self, request: web.Request) -> web.StreamResponse:
        return self._file(request.match_info["file"])

    def _file(self, name: str) -> web.StreamResponse:
        suffix = name[name.rfind(".") :] if "." in name else ""
        if "/" in name or suffix not in _STATIC_TYPES:
            raise web.HTTPNotFound()
        path = _STATIC / name
        if not path.is_file():
            raise web.HTTPNotFound()
        return web.Response(body=path.read_bytes(), content_type=_STATIC_TYPES[suffix])

    async def _health(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    # -- data ----------------------------------------------------------------------------
    async def _session(self, request: web.Request) -> web.StreamResponse:
        user = request[_USER]
        can = {}
        for action in SESSION_ACTIONS:
            decision = await self.auth.decide(user, action_attributes(action))
            can[action.value] = decision.allowed
        return _json(
            {
                "user": user.name,
                "groups": list(user.groups),
                "csrf": self.csrf.issue(_credentials(request, user)),
                "can": can,
            }
        )

    async def _authorized_view(
        self, request: web.Request, view: str
    ) -> tuple[dict[str, Any] | None, web.Response | None]:
        if view not in VIEWS:
            return None, _error(404, f"no view {view!r}; views are {', '.join(VIEWS)}")
        namespace = request.query.get("namespace", "")
        name = request.query.get("name", "")
        if view == "workload" and not (namespace and name):
            return None, _error(400, "the workload view needs namespace and name")
        user = request[_USER]
        decision = await self.auth.decide(user, view_attributes(view, namespace, name))
        if not decision.allowed:
            _log.info("dashboard.forbidden", user=user.name, view=view, namespace=namespace)
            where = f' in namespace "{namespace}"' if namespace else ""
            return None, _error(
                403,
                f'User "{user.name}" may not see the {view} view{where}: RBAC does not allow '
                f"{view_attributes(view, namespace, name).verb} "
                f"{view_attributes(view).resource}.{view_attributes(view).group}"
                + (f" ({decision.reason})" if decision.reason else ""),
            )
        if view == "history":
            latency = await self.auth.decide(user, view_attributes("fleet"))
            request[_HIDE_LATENCY] = not latency.allowed
        body = self._shown(request, view, self.build(view, namespace, name))
        if body is None:
            return None, _error(404, f"workload {namespace}/{name} not found")
        return body, None

    def _shown(
        self, request: web.Request, view: str, body: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The view as this user may see it: the history's worker latencies only for a
        user who may see the workers (list multikueueclusters)."""
        if view != "history" or body is None or not request.get(_HIDE_LATENCY):
            return body
        return {
            **body,
            "dispatchLatency": [],
            "latencyHidden": "RBAC does not allow list multikueueclusters.kueue.x-k8s.io, "
            "so the workers' dispatch latency is not shown",
        }

    def _event(self, request: web.Request, view: str, built: BuiltView) -> bytes:
        """The shared build's event as this user may see it: serialized again only when
        `_shown` hides a part of it from them."""
        shown = self._shown(request, view, built.body)
        if shown is built.body:
            return built.event
        return b"event: view\ndata: " + orjson.dumps(shown) + b"\n\n"

    def build(self, view: str, namespace: str = "", name: str = "") -> dict[str, Any] | None:
        """The view's body, shared with every stream of it (`SharedViews`)."""
        return self.views.get((view, namespace, name)).body

    def _build(self, view: str, namespace: str, name: str) -> dict[str, Any] | None:
        now = self.now()
        if view == "fleet":
            return fleet_view(self.source, now, self.rows)
        if view == "queues":
            return queues_view(self.source)
        if view == "workloads":
            return workloads_view(self.source, now, namespace or None, self.rows)
        if view == "workload":
            return workload_view(self.source, namespace, name, now)
        if view == "history":
            return self.history.view()
        return flavors_view(self.source)

    async def _view(self, request: web.Request) -> web.StreamResponse:
        body, refused = await self._authorized_view(request, request.match_info["view"])
        return refused if refused is not None else _json(body)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        view = request.query.get("view", "")
        _, refused = await self._authorized_view(request, view)
        if refused is not None:
            return refused
        user = request[_USER]
        try:
            with self.limiter.stream(user.name):
                return await self._push(request, view)
        except ConnectionResetError:  # the browser went away: the stream is over
            return web.Response(status=204)
        except TooManyStreams:
            return _error(
                429, f"too many live streams for {user.name} (at most {self.limiter.per_user})"
            )

    async def _push(self, request: web.Request, view: str) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        key = (view, request.query.get("namespace", ""), request.query.get("name", ""))
        seen = 0 if self.changes is None else self.changes.count
        last = await self.views.current(key)
        await response.write(self._event(request, view, last))
        checked = sent = time.monotonic()
        while True:
            due = min(checked + self.recheck_seconds, sent + self.keepalive_seconds)
            seen = await self._next_change(key, seen, due - time.monotonic())
            if time.monotonic() - checked >= self.recheck_seconds:
                checked = time.monotonic()
                user = await self.auth.authenticate(request)
                refused = None
                if user is not None:
                    request[_USER] = user
                    _, refused = await self._authorized_view(request, view)
                if user is None or refused is not None:
                    reason = b"unauthorized" if user is None else b"forbidden"
                    await response.write(b"event: " + reason + b"\ndata: {}\n\n")
                    break
            built = await self.views.current(key)
            if built is not last and built.event != last.event:
                await response.write(self._event(request, view, built))
                sent = time.monotonic()
            elif time.monotonic() - sent >= self.keepalive_seconds:
                await response.write(b": keepalive\n\n")
                sent = time.monotonic()
            last = built
        await response.write_eof()
        return response

    async def _next_change(self, key: ViewKey, seen: int, due_in: float) -> int:
        """Until something may have changed for the view `key` (then `coalesce_seconds`
        more, for the rest of a burst), its tick, or `due_in` seconds (the stream's own
        rechecks); the change count to wait past next. Without `changes`, `push_seconds`."""
        if self.changes is None:
            await asyncio.sleep(self.push_seconds)
            return seen
        timeout = max(0.0, due_in)
        tick = self.views.next_tick_in(key)
        if tick is not None:
            timeout = min(timeout, tick + _AFTER_TICK)
        if await self.changes.wait(seen, timeout) != seen:
            await asyncio.sleep(self.coalesce_seconds)
        return self.changes.count

    # -- the workload detail's on-demand reads ------------------------------------------
    async def _detail_workload(self, request: web.Request) -> Workload | web.Response:
        """The Workload the query names once the user may `get` it, or the refusal."""
        _, refused = await self._authorized_view(request, "workload")
        if refused is not None:
            return refused
        raw = self.source.workload(request.query["namespace"], request.query["name"])
        if raw is None:
            return _error(404, "workload not found")
        return decoded_workload(raw)

    async def _refused_part(
        self, request: web.Request, part: str, attributes: ResourceAttributes
    ) -> web.Response | None:
        user = request[_USER]
        decision = await self.auth.decide(user, attributes)
        if decision.allowed:
            return None
        what = (
            f"{attributes.resource}/{attributes.subresource}"
            if attributes.subresource
            else (attributes.resource)
        )
        return _error(
            403,
            f'User "{user.name}" may not see this workload\'s {part}: RBAC does not allow '
            f'{attributes.verb} {what} in namespace "{attributes.namespace}"',
        )

    async def _workload_events(self, request: web.Request) -> web.StreamResponse:
        workload = await self._detail_workload(request)
        if isinstance(workload, web.Response):
            return workload
        meta = workload.metadata
        refused = await self._refused_part(request, "events", events_attributes(meta.namespace))
        if refused is not None:
            return refused
        if self.reads is None:
            return _error(503, "this dashboard reads no Events")
        objects = [("Workload", meta.name)]
        owner = owner_job(workload)
        if owner is not None:
            objects.append((owner[0], owner[1]))
        try:
            async with self._detail_reads:
                events = await self.reads.events(meta.namespace, objects)
        except KubeError as error:
            return _error(502, f"the Events could not be read: {error}")
        return _json(
            {
                "events": [
                    {
                        "time": e.time,
                        "type": e.type,
                        "reason": e.reason,
                        "object": e.object,
                        "message": e.message,
                        "count": e.count,
                    }
                    for e in events
                ]
            }
        )

    async def _workload_logs(self, request: web.Request) -> web.StreamResponse:
        workload = await self._detail_workload(request)
        if isinstance(workload, web.Response):
            return workload
        namespace = workload.metadata.namespace
        refused = await self._refused_part(request, "pod logs", logs_attributes(namespace))
        if refused is not None:
            return refused
        if self.reads is None:
            return _error(503, "this dashboard reads no logs")
        async with self._detail_reads:
            logs = await self.reads.pod_logs(workload)
        return _json(
            {
                "note": logs.note,
                "tails": [
                    {
                        "pod": t.pod,
                        "container": t.container,
                        "cluster": t.cluster,
                        "text": t.text,
                        "error": t.error,
                    }
                    for t in logs.tails
                ],
            }
        )

    async def _priority_right(self, user: UserInfo, target: PriorityTarget) -> tuple[bool, str]:
        attributes = patch_attributes(
            target.group, target.version, target.plural, target.namespace, target.name
        )
        decision = await self.auth.decide(user, attributes)
        group = f".{target.group}" if target.group else ""
        why = (
            ""
            if decision.allowed
            else f'User "{user.name}" may not change this priority: RBAC does not allow '
            f'patch {target.plural}{group} "{target.name}" in namespace "{target.namespace}"'
        )
        return decision.allowed, why

    async def _workload_priority(self, request: web.Request) -> web.StreamResponse:
        workload = await self._detail_workload(request)
        if isinstance(workload, web.Response):
            return workload
        classes = self.source.workload_priority_classes()
        body: dict[str, Any] = {
            "classes": [{"name": n, "value": v} for n, v in sorted(classes.items())],
            "allowed": False,
            "reason": "",
            "writes": "",
        }
        try:
            target = priority_target(workload)
        except PriorityNotChangeable as why:
            return _json({**body, "reason": str(why)})
        allowed, reason = await self._priority_right(request[_USER], target)
        where = f"{target.kind} {target.name}" + (
            " (its kueue.x-k8s.io/priority-class label)" if target.on_job else ""
        )
        return _json(
            {
                **body,
                "current": target.current,
                "allowed": allowed,
                "reason": reason,
                "writes": where,
            }
        )

    # -- actions -------------------------------------------------------------------------
    async def _action(self, request: web.Request) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is None or origin.split("://", 1)[-1] != request.host:
            return _error(403, "actions are only accepted from the dashboard's own page")
        user = request[_USER]
        if not self.csrf.valid(_credentials(request, user), request.headers.get(CSRF_HEADER)):
            return _error(403, "missing or wrong CSRF token; reload the page")
        try:
            action = Action(request.match_info["action"])
        except ValueError:
            return _error(404, f"no action {request.match_info['action']!r}")
        try:
            target = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON: {namespace?, name}")
        name = str((target or {}).get("name") or "")
        namespace = str((target or {}).get("namespace") or "")
        workload_action = action in (Action.DEACTIVATE_WORKLOAD, Action.SET_WORKLOAD_PRIORITY)
        if not name or (workload_action and not namespace):
            return _error(400, "say which object: name (and namespace for a workload)")
        if action is Action.SET_WORKLOAD_PRIORITY:
            return await self._set_priority(
                user, namespace, name, str((target or {}).get("priorityClass") or "")
            )
        decision = await self.auth.decide(user, action_attributes(action, namespace, name))
        if not decision.allowed:
            return _error(403, f'User "{user.name}" may not patch {name}: RBAC does not allow it')
        try:
            if action is Action.DEACTIVATE_WORKLOAD:
                await self.actions.deactivate_workload(namespace, name)
            else:
                await self.actions.set_cluster_queue_stopped(
                    name, action is Action.STOP_CLUSTER_QUEUE
                )
        except KubeError as error:
            return _error(502, f"the write failed: {error}")
        _log.info("dashboard.action", user=user.name, action=action.value, name=name)
        return _json({"done": action.value, "namespace": namespace, "name": name})

    async def _set_priority(
        self, user: UserInfo, namespace: str, name: str, wanted: str
    ) -> web.StreamResponse:
        """Point the Workload at WorkloadPriorityClass `wanted`, written where Kueue expects
        it (`hub.dashboard.priority_change`), after `patch` on that object was allowed."""
        raw = self.source.workload(namespace, name)
        if raw is None:
            return _error(404, f"workload {namespace}/{name} not found")
        try:
            target = priority_target(decoded_workload(raw))
        except PriorityNotChangeable as why:
            return _error(409, str(why))
        allowed, reason = await self._priority_right(user, target)
        if not allowed:
            return _error(403, reason)
        classes = self.source.workload_priority_classes()
        if wanted not in classes:
            known = ", ".join(sorted(classes)) or "none"
            return _error(400, f"no WorkloadPriorityClass {wanted!r} (there are: {known})")
        try:
            await self.actions.set_priority_class(target, wanted, classes[wanted])
        except KubeError as error:
            return _error(502, f"the write failed: {error}")
        _log.info(
            "dashboard.action",
            user=user.name,
            action=Action.SET_WORKLOAD_PRIORITY.value,
            name=name,
            priority_class=wanted,
            written=f"{target.kind}/{target.name}",
        )
        return _json(
            {
                "done": Action.SET_WORKLOAD_PRIORITY.value,
                "namespace": namespace,
                "name": name,
                "priorityClass": wanted,
                "written": f"{target.kind}/{target.name}",
            }
        )
