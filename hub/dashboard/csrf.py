"""CSRF tokens for the dashboard's actions, bound to the caller's credentials.

Credentials travel in the Authorization header (never in cookies), so a foreign page
cannot make the browser send them; the token is a second lock: an action must carry
`X-CSRF-Token`, an HMAC of the credentials under a key this process made up, handed out by
`GET /api/session` (readable only by the dashboard's own origin). A foreign Origin is
refused before anything else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

CSRF_HEADER = "X-CSRF-Token"


class CsrfTokens:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def issue(self, credentials: str) -> str:
        return hmac.new(self._key, credentials.encode(), hashlib.sha256).hexdigest()

    def valid(self, credentials: str, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(self.issue(credentials), token)
