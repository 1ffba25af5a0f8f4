"""Keep the token a Secret already holds, or mint a new one? A pure decision.

Re-running join must not change anything (so a token in use is kept), yet a token must never
be kept when it cannot work: of another identity, of a ServiceAccount since deleted and
re-created (bound tokens die with their account), expired, or unreadable. `--rotate`
additionally replaces tokens that expire within the rotation window, before they fail.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cli.join.manager_objects import (
    TOKEN_EXPIRY_ANNOTATION,
    TOKEN_SUBJECT_ANNOTATION,
    secret_kubeconfig_text,
)
from cli.join.minted_kubeconfig import service_account_uid, token_of
from core.api.kube_time import parse_optional_time


class MintReason(enum.StrEnum):
    NO_SECRET = "no kubeconfig Secret yet"
    UNREADABLE = "the Secret's kubeconfig or expiry cannot be read"
    OTHER_IDENTITY = "the Secret holds a token of another identity"
    NO_ACCOUNT = "the ServiceAccount does not exist yet"
    ACCOUNT_REPLACED = "the ServiceAccount was re-created since the token was minted"
    EXPIRED = "the token has expired"
    ROTATION_DUE = "the token expires within the rotation window"


@dataclass(frozen=True, slots=True)
class TokenDecision:
    mint_reason: MintReason | None
    """Why a new token is needed; None: keep `token`."""
    token: str | None = None
    expires_at: datetime | None = None
    """Of the kept token."""
    rotation_due: bool = False
    """A kept token that expires within the rotation window (a warning, without --rotate)."""

    @property
    def mint(self) -> bool:
        return self.mint_reason is not None


def decide_token(
    secret: Mapping[str, Any] | None,
    *,
    subject: str,
    account_uid: str | None,
    now: datetime,
    rotate: bool,
    rotate_before: timedelta,
) -> TokenDecision:
    """`secret` is the stored Secret (or None); `account_uid` the live ServiceAccount's."""
    if secret is None:
        return TokenDecision(MintReason.NO_SECRET)
    if account_uid is None:
        return TokenDecision(MintReason.NO_ACCOUNT)
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if annotations.get(TOKEN_SUBJECT_ANNOTATION) != subject:
        return TokenDecision(MintReason.OTHER_IDENTITY)
    text = secret_kubeconfig_text(dict(secret))
    token = token_of(text) if text else None
    expires_at = parse_optional_time(annotations.get(TOKEN_EXPIRY_ANNOTATION))
    if token is None or expires_at is None:
        return TokenDecision(MintReason.UNREADABLE)
    if service_account_uid(token) != account_uid:
        return TokenDecision(MintReason.ACCOUNT_REPLACED)
    if expires_at <= now:
        return TokenDecision(MintReason.EXPIRED)
    due = expires_at - now <= rotate_before
    if due and rotate:
        return TokenDecision(MintReason.ROTATION_DUE)
    return TokenDecision(None, token=token, expires_at=expires_at, rotation_due=due)
