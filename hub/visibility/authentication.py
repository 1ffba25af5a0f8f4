"""Who is asking: the user behind a request, as an aggregated API server decides it.

Three ways in, tried in order (as the apiserver's delegating authenticator does):
1. the front proxy: a client certificate signed by the request-header CA (and, when the
   cluster names them, with an allowed common name) vouches for the user named in the
   `X-Remote-*` headers. Those headers mean nothing on any other connection;
2. a client certificate signed by the cluster's client CA: the user is its common name,
   its organisations are the groups;
3. a bearer token, checked with a TokenReview (see `token_review`).
Everything here is pure: certificates and headers in, a `UserInfo` or None out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

from hub.visibility.front_proxy import ClusterAuthentication, RequestHeaderConfig

AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user, as SubjectAccessReview's `spec` wants it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class MultiHeaders(Protocol):
    """Request headers where a name may repeat (aiohttp's CIMultiDictProxy)."""

    def getall(self, key: str, default: list[str], /) -> list[str]: ...

    def __iter__(self) -> Iterator[str]: ...


def issued_by(
    cert: x509.Certificate, authorities: Sequence[x509.Certificate], now: dt.datetime
) -> bool:
    """Whether `cert` is valid now and was signed directly by one of `authorities`."""
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        return False
    for authority in authorities:
        if authority.subject != cert.issuer:
            continue
        try:
            cert.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        if authority.not_valid_before_utc <= now <= authority.not_valid_after_utc:
            return True
    return False


def _names(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(attr.value) for attr in cert.subject.get_attributes_for_oid(oid)]


def _first_header(headers: MultiHeaders, names: Sequence[str]) -> str:
    for name in names:
        for value in headers.getall(name, []):
            if value.strip():
                return value.strip()
    return ""


def _extra(headers: MultiHeaders, prefixes: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """`X-Remote-Extra-<key>: v` → {key: (v, ...)}; keys are lower-cased and %-decoded."""
    extra: dict[str, list[str]] = {}
    lowered = [p.lower() for p in prefixes]
    seen: set[str] = set()
    for header in headers:
        name = str(header)
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        for prefix in lowered:
            if name.lower().startswith(prefix) and len(name) > len(prefix):
                key = unquote(name[len(prefix) :].lower())
                extra.setdefault(key, []).extend(headers.getall(name, []))
                break
    return {key: tuple(values) for key, values in extra.items()}


def front_proxy_user(
    cert: x509.Certificate, headers: MultiHeaders, config: RequestHeaderConfig, now: dt.datetime
) -> UserInfo | None:
    """The user a trusted front proxy names; None if `cert` is not the proxy's or no user."""
    if not issued_by(cert, config.ca, now):
        return None
    if config.allowed_names:
        common_names = _names(cert, NameOID.COMMON_NAME)
        if not any(cn in config.allowed_names for cn in common_names):
            return None
    name = _first_header(headers, config.username_headers)
    if not name:
        return None
    groups = [
        value for header in config.group_headers for value in headers.getall(header, []) if value
    ]
    return UserInfo(
        name=name,
        uid=_first_header(headers, config.uid_headers),
        groups=tuple(groups),
        extra=_extra(headers, config.extra_header_prefixes),
    )


def client_certificate_user(
    cert: x509.Certificate, client_ca: Sequence[x509.Certificate], now: dt.datetime
) -> UserInfo | None:
    """The user of a client certificate the cluster's CA signed: CN, groups from O."""
    if not issued_by(cert, client_ca, now):
        return None
    common_names = _names(cert, NameOID.COMMON_NAME)
    if not common_names or not common_names[0]:
        return None
    return UserInfo(name=common_names[0], groups=tuple(_names(cert, NameOID.ORGANIZATION_NAME)))


def with_authenticated_group(user: UserInfo | None) -> UserInfo | None:
    """Add `system:authenticated`, as the apiserver does for every user it authenticates.

    RBAC's default discovery and self-review grants are bound to that group, so a user
    without it could not even read the API's discovery documents.
    """
    if user is None or AUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(
        name=user.name,
        uid=user.uid,
        groups=(*user.groups, AUTHENTICATED_GROUP),
        extra=user.extra,
    )


def certificate_user(
    cert_der: bytes | None,
    headers: MultiHeaders,
    trust: ClusterAuthentication,
    now: dt.datetime,
) -> UserInfo | None:
    """The user a TLS client certificate stands for (front proxy first), or None."""
    if not cert_der:
        return None
    try:
        cert = x509.load_der_x509_certificate(cert_der)
    except ValueError:
        return None
    if trust.request_header is not None:
        user = front_proxy_user(cert, headers, trust.request_header, now)
        if user is not None:
            return with_authenticated_group(user)
    return with_authenticated_group(client_certificate_user(cert, trust.client_ca, now))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
