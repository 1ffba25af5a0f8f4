"""Bearer tokens checked by the cluster (authentication.k8s.io/v1 TokenReview).

The hub cannot judge a token itself (service-account, OIDC or webhook tokens all mean
something only to the apiserver), so it asks. Answers are cached for a few seconds, keyed
by the token's SHA-256, like the apiserver's delegating authenticator, so a client's burst
of requests costs one review. An apiserver that cannot be reached means "not
authenticated" (401): failing closed is the only safe answer.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import structlog

from core.kube.client import KubeClient
from core.kube.errors import KubeError
from hub.visibility.authentication import UserInfo

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
CACHE_TTL_SECONDS = 10.0
_MAX_CACHED = 4096

_log = structlog.get_logger("hub.visibility.authn")


def user_from_review(review: Mapping[str, Any]) -> UserInfo | None:
    """A TokenReview's answer → the user, or None when the token was not accepted."""
    status = review.get("status") or {}
    if status.get("authenticated") is not True:
        return None
    user = status.get("user") or {}
    name = str(user.get("username") or "")
    if not name:
        return None
    extra = {
        str(key): tuple(str(v) for v in values or ())
        for key, values in (user.get("extra") or {}).items()
    }
    return UserInfo(
        name=name,
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=extra,
    )


class TokenReviewer:
    """Asks the apiserver who a token belongs to; remembers answers for `ttl_seconds`."""

    __slots__ = ("_cache", "_client", "_clock", "_ttl")

    def __init__(
        self,
        client: KubeClient,
        *,
        ttl_seconds: float = CACHE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, UserInfo | None]] = {}

    async def review(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        }
        try:
            payload = await self._client.request("POST", TOKEN_REVIEW_PATH, body=body)
        except KubeError as error:
            _log.warning("token_review_failed", error=str(error))
            return None
        user = user_from_review(orjson.loads(payload))
        if len(self._cache) >= _MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        self._cache[key] = (now + self._ttl, user)
        return user
