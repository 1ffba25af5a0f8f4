"""What a guarded server of the manager needs from delegated authentication.

The manager serves /metrics behind it when asked; the hub's implementation
(`hub.visibility.delegated_auth.DelegatedAuth`: TokenReview, SubjectAccessReview, front
proxy) also guards the visibility API. The manager only needs this much of it.
"""

from __future__ import annotations

import ssl
from typing import Protocol

from aiohttp.typedefs import Middleware


class RequestAuth(Protocol):
    """Delegated authn/authz as an aiohttp middleware, with client CAs to trust."""

    async def load_trust(self) -> object: ...

    def follow_trust(self, context: ssl.SSLContext) -> None: ...

    def middleware(self, *, open_paths: frozenset[str] = ...) -> Middleware: ...
