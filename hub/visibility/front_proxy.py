"""Whom to trust, as the cluster publishes it for aggregated API servers.

The kube-apiserver writes `kube-system/extension-apiserver-authentication`: the CA of
client certificates it accepts (`client-ca-file`) and, when it runs a front proxy, the CA
of the proxy's client certificate plus the headers that carry the end user
(`requestheader-*`). An aggregated server reads the ConfigMap instead of taking flags, so
it follows the apiserver's settings. This module is the pure part: parse the ConfigMap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from cryptography import x509

CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"

CLIENT_CA_KEY = "client-ca-file"
REQUESTHEADER_CA_KEY = "requestheader-client-ca-file"
ALLOWED_NAMES_KEY = "requestheader-allowed-names"
USERNAME_HEADERS_KEY = "requestheader-username-headers"
GROUP_HEADERS_KEY = "requestheader-group-headers"
EXTRA_PREFIXES_KEY = "requestheader-extra-headers-prefix"
UID_HEADERS_KEY = "requestheader-uid-headers"


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """How to recognise the front proxy and read the user it vouches for.

    `allowed_names` empty means any certificate the CA signed may act as the proxy.
    """

    ca: tuple[x509.Certificate, ...]
    allowed_names: frozenset[str] = frozenset()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_header_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)
    uid_headers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterAuthentication:
    """Both trust anchors; either may be absent (then that way in is closed)."""

    client_ca: tuple[x509.Certificate, ...] = ()
    request_header: RequestHeaderConfig | None = None
    ca_pem: bytes = field(default=b"", repr=False)
    """Every CA above as one PEM bundle, for the TLS layer to ask clients for."""


class AuthenticationConfigError(ValueError):
    """The ConfigMap holds something that is not what the apiserver writes there."""


def _certificates(data: Mapping[str, str], key: str) -> tuple[x509.Certificate, ...]:
    pem = data.get(key, "").strip()
    if not pem:
        return ()
    try:
        return tuple(x509.load_pem_x509_certificates(pem.encode()))
    except ValueError as error:
        raise AuthenticationConfigError(
            f"{CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}: {key} is not a PEM certificate bundle: "
            f"{error}"
        ) from None


def _string_list(data: Mapping[str, str], key: str) -> tuple[str, ...] | None:
    raw = data.get(key)
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuthenticationConfigError(
            f"{CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}: {key} must be a JSON list of strings, "
            f"got {raw!r}"
        )
    return tuple(v for v in value if v)


def parse_authentication_configmap(data: Mapping[str, str]) -> ClusterAuthentication:
    """The ConfigMap's `data` → trust anchors; header lists default as the apiserver's."""
    client_ca = _certificates(data, CLIENT_CA_KEY)
    proxy_ca = _certificates(data, REQUESTHEADER_CA_KEY)
    request_header = None
    if proxy_ca:
        defaults = RequestHeaderConfig(ca=proxy_ca)
        request_header = RequestHeaderConfig(
            ca=proxy_ca,
            allowed_names=frozenset(_string_list(data, ALLOWED_NAMES_KEY) or ()),
            username_headers=_string_list(data, USERNAME_HEADERS_KEY) or defaults.username_headers,
            group_headers=_string_list(data, GROUP_HEADERS_KEY) or defaults.group_headers,
            extra_header_prefixes=_string_list(data, EXTRA_PREFIXES_KEY)
            or defaults.extra_header_prefixes,
            uid_headers=_string_list(data, UID_HEADERS_KEY) or (),
        )
    pem = "\n".join(
        data.get(key, "").strip() for key in (CLIENT_CA_KEY, REQUESTHEADER_CA_KEY) if data.get(key)
    )
    return ClusterAuthentication(
        client_ca=client_ca, request_header=request_header, ca_pem=pem.encode()
    )
