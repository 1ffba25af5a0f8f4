"""May this user do that? Asked of the cluster (authorization.k8s.io/v1 SubjectAccessReview).

The cluster's RBAC (or whichever authorizers it runs) decides for the hub, exactly as it
does for the apiserver's own resources, so granting `get` on
`clusterqueues/pendingworkloads` in a Role is all it takes. Decisions are cached for a
few seconds per (user, attributes); an apiserver that cannot be reached means "no".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import orjson
import structlog

from core.kube.client import KubeClient
from core.kube.errors import KubeError
from hub.visibility.authentication import UserInfo
from hub.visibility.authorization import NonResourceAttributes, RequestAttributes

SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_TTL_SECONDS = 10.0
_MAX_CACHED = 4096

_log = structlog.get_logger("hub.visibility.authz")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


def review_body(user: UserInfo, attributes: RequestAttributes) -> dict[str, Any]:
    """The SubjectAccessReview to create for `user` doing `attributes`."""
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra.items()}
    if isinstance(attributes, NonResourceAttributes):
        spec["nonResourceAttributes"] = asdict(attributes)
    else:
        spec["resourceAttributes"] = {k: v for k, v in asdict(attributes).items() if v}
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    }


def decision_from_review(review: dict[str, Any]) -> Decision:
    status = review.get("status") or {}
    allowed = status.get("allowed") is True and status.get("denied") is not True
    return Decision(allowed=allowed, reason=str(status.get("reason") or ""))


def _cache_key(user: UserInfo, attributes: RequestAttributes) -> tuple[object, ...]:
    extra = tuple(sorted(user.extra.items()))
    return (user.name, user.uid, user.groups, extra, attributes)


class AccessReviewer:
    """Creates SubjectAccessReviews; remembers decisions for `ttl_seconds`."""

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
        self._cache: dict[tuple[object, ...], tuple[float, Decision]] = {}

    async def decide(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        key = _cache_key(user, attributes)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            payload = await self._client.request(
                "POST", SUBJECT_ACCESS_REVIEW_PATH, body=review_body(user, attributes)
            )
        except KubeError as error:
            _log.warning("access_review_failed", user=user.name, error=str(error))
            return Decision(allowed=False, reason="the authorization check could not be made")
        decision = decision_from_review(orjson.loads(payload))
        if len(self._cache) >= _MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        self._cache[key] = (now + self._ttl, decision)
        return decision
