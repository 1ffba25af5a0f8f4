"""Delegated authentication and authorization, as an aggregated API server does them.

`DelegatedAuth` reads whom to trust from the cluster (`front_proxy`), tells who is asking
(front-proxy certificate + headers, client certificate, or bearer token via TokenReview)
and asks the cluster whether they may (SubjectAccessReview). `middleware` puts it in
front of an aiohttp application: no user → 401, a user RBAC refuses → 403, both as
meta/v1 Status bodies like the apiserver's. Paths the caller marks open (health probes)
pass untouched. The trust ConfigMap is re-read at most every `refresh_seconds`, on demand,
so a rotated front-proxy CA is picked up without a restart.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
import time
from collections.abc import Callable

import msgspec
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from core.kube.client import KubeClient
from core.kube.errors import KubeError, NotFound
from core.kube.resources import CONFIGMAPS
from core.manager.serving_tls import trust_client_cas
from hub.visibility.access_review import AccessReviewer, Decision
from hub.visibility.authentication import UserInfo, bearer_token, certificate_user
from hub.visibility.authorization import (
    RequestAttributes,
    ResourceAttributes,
    forbidden_message,
    request_attributes,
)
from hub.visibility.front_proxy import (
    CONFIGMAP_NAME,
    CONFIGMAP_NAMESPACE,
    AuthenticationConfigError,
    ClusterAuthentication,
    parse_authentication_configmap,
)
from hub.visibility.status import Status, StatusDetails, StatusReason
from hub.visibility.token_review import TokenReviewer

USER_KEY = web.RequestKey("fleetq_user", UserInfo)
"""Where the middleware leaves the authenticated `UserInfo` on the request."""
REFRESH_SECONDS = 60.0

_log = structlog.get_logger("hub.visibility.auth")
_encoder = msgspec.json.Encoder()


def unauthorized() -> Status:
    return Status(message="Unauthorized", reason=StatusReason.UNAUTHORIZED, code=401)


def forbidden(user: UserInfo, attributes: RequestAttributes, decision: Decision) -> Status:
    details: StatusDetails | msgspec.UnsetType = msgspec.UNSET
    if isinstance(attributes, ResourceAttributes):
        details = StatusDetails(
            name=attributes.name, group=attributes.group, kind=attributes.resource
        )
    return Status(
        message=forbidden_message(user, attributes, decision.reason),
        reason=StatusReason.FORBIDDEN,
        details=details,
        code=403,
    )


def _status_response(status: Status) -> web.Response:
    return web.Response(
        body=_encoder.encode(status), status=status.code, content_type="application/json"
    )


def _peer_certificate(request: web.Request) -> bytes | None:
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    return ssl_object.getpeercert(binary_form=True)


class DelegatedAuth:
    """Authn/authz against one cluster (see module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self._client = client
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._now = now
        self.tokens = TokenReviewer(client, clock=clock)
        self.access = AccessReviewer(client, clock=clock)
        self.trust = ClusterAuthentication()
        self._loaded_at: float | None = None
        self._lock = asyncio.Lock()
        self._contexts: list[ssl.SSLContext] = []

    def follow_trust(self, context: ssl.SSLContext) -> None:
        """Keep `context` accepting client certificates from the cluster's current CAs."""
        self._contexts.append(context)
        trust_client_cas(context, self.trust.ca_pem)

    async def load_trust(self) -> ClusterAuthentication:
        """Read the cluster's authentication ConfigMap; keep the old trust on failure."""
        try:
            configmap = await self._client.get(
                CONFIGMAPS, CONFIGMAP_NAME, namespace=CONFIGMAP_NAMESPACE
            )
            trust = parse_authentication_configmap(configmap.get("data") or {})
        except NotFound:
            _log.warning("authentication_configmap_missing", only="bearer tokens")
            trust = ClusterAuthentication()
        except (KubeError, AuthenticationConfigError) as error:
            _log.warning("authentication_configmap_unreadable", error=str(error))
            self._loaded_at = self._clock()
            return self.trust
        if trust.ca_pem != self.trust.ca_pem:
            for context in self._contexts:
                trust_client_cas(context, trust.ca_pem)
            _log.info(
                "authentication_trust_loaded",
                front_proxy=trust.request_header is not None,
                client_cas=len(trust.client_ca),
            )
        self.trust = trust
        self._loaded_at = self._clock()
        return trust

    async def _fresh_trust(self) -> ClusterAuthentication:
        loaded = self._loaded_at
        if loaded is None or self._clock() - loaded >= self._refresh_seconds:
            async with self._lock:
                if self._loaded_at == loaded:
                    await self.load_trust()
        return self.trust

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        trust = await self._fresh_trust()
        user = certificate_user(_peer_certificate(request), request.headers, trust, self._now())
        if user is not None:
            return user
        token = bearer_token(request.headers.get("Authorization"))
        return None if token is None else await self.tokens.review(token)

    def middleware(self, *, open_paths: frozenset[str] = frozenset()) -> Middleware:
        """An aiohttp middleware guarding every path except `open_paths`."""

        @web.middleware
        async def delegated_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.path in open_paths:
                return await handler(request)
            user = await self.authenticate(request)
            if user is None:
                return _status_response(unauthorized())
            attributes = request_attributes(request.method, request.path)
            decision = await self.access.decide(user, attributes)
            if not decision.allowed:
                _log.info(
                    "request_forbidden",
                    user=user.name,
                    groups=list(user.groups),
                    path=request.path,
                    reason=decision.reason,
                )
                return _status_response(forbidden(user, attributes, decision))
            request[USER_KEY] = user
            return await handler(request)

        return delegated_auth
