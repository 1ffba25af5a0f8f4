"""Mint a bounded-lifetime token for the worker identity with the TokenRequest API.

No long-lived token Secret is ever created on the worker: the token exists only in the
manager's Secret, and it expires. The apiserver may shorten the lifetime asked for (its
--service-account-max-token-expiration); the expiry it reports is the one recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cli.join.cluster_rest import ClusterRest
from cli.join.fleet_file import IdentitySpec
from cli.join.resource_paths import KINDS
from core.api.kube_time import parse_optional_time


class TokenRequestError(Exception):
    """The apiserver answered a TokenRequest without a usable token."""


@dataclass(frozen=True, slots=True)
class MintedToken:
    token: str
    expires_at: datetime


def token_request_body(lifetime_seconds: int) -> dict[str, object]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": lifetime_seconds},
    }


def mint_token(rest: ClusterRest, identity: IdentitySpec) -> MintedToken:
    path = KINDS["ServiceAccount"].object_path(identity.service_account, identity.namespace)
    answer = rest.create(f"{path}/token", token_request_body(identity.token_lifetime_seconds))
    status = answer.get("status") or {}
    token = status.get("token")
    expires_at = parse_optional_time(status.get("expirationTimestamp"))
    if not token or expires_at is None:
        raise TokenRequestError(
            f"{rest.endpoint.label}: TokenRequest for {identity.subject} returned no token "
            "or no expiry"
        )
    return MintedToken(str(token), expires_at)
