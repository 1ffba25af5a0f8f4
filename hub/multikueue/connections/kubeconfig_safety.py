"""Is a worker's kubeconfig safe for the hub to use? Pure checks, one reason per refusal.

A kubeconfig stored in a Secret is written by whoever may write Secrets in the hub's
namespace, not by whoever runs the hub. Used as it is, it could make the hub run a program
(exec plugins, auth-providers), read the hub's own files (token, CA or client-certificate
files), skip certificate checks or send passwords. Every user and cluster entry is checked,
not just the current context's, as upstream does; the messages are upstream's where upstream
has one, so that `InsecureKubeConfig` conditions read the same on both.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_SUBDOMAIN_MAX = 253


def find_insecurity(document: Mapping[str, Any]) -> str | None:
    """The first reason the kubeconfig must not be used, or None when it is acceptable."""
    users = list(_entries(document, "users", "user"))
    clusters = list(_entries(document, "clusters", "cluster"))
    for _, user in users:
        if user.get("tokenFile"):
            return "tokenFile is not allowed"
    for name, cluster in clusters:
        reason = _cluster_insecurity(name, cluster)
        if reason:
            return reason
    for name, user in users:
        reason = _user_insecurity(name, user)
        if reason:
            return reason
    return None


def _cluster_insecurity(name: str, cluster: Mapping[str, Any]) -> str | None:
    if cluster.get("insecure-skip-tls-verify"):
        return f"insecure TLS verification is not allowed for cluster {name}"
    if cluster.get("certificate-authority"):
        return (
            "certificate-authority file paths are not allowed, "
            f"use certificate-authority-data for cluster {name}"
        )
    server = str(cluster.get("server") or "")
    if not server:
        return f"server URL is required for cluster {name}"
    if server.lower().startswith("http://"):
        return f"plain HTTP is not allowed, use https for cluster {name}"
    if not is_trusted_endpoint(server):
        return "untrusted server endpoint"
    return None


def _user_insecurity(name: str, user: Mapping[str, Any]) -> str | None:
    if user.get("username") or user.get("password"):
        return "basic auth is not allowed"
    if user.get("exec"):
        return "exec plugins are not allowed"
    if user.get("auth-provider"):
        return "auth providers are not allowed"
    for field in ("client-certificate", "client-key"):
        if user.get(field):
            return f"{field} file paths are not allowed, use {field}-data for user {name}"
    return None


def is_trusted_endpoint(server: str) -> bool:
    """An https URL whose host is an IP address or a DNS-1123 subdomain (any case)."""
    try:
        parts = urlsplit(server)
        host = parts.hostname
        _ = parts.port  # raises on a malformed port
    except ValueError:
        return False
    if parts.scheme.lower() != "https" or not host:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return len(host) <= _DNS1123_SUBDOMAIN_MAX and bool(_DNS1123_SUBDOMAIN.fullmatch(host))
    return True


def _entries(document: Mapping[str, Any], section: str, body: str) -> Iterator[tuple[str, Any]]:
    for entry in document.get(section) or ():
        if isinstance(entry, Mapping):
            content = entry.get(body)
            yield str(entry.get("name", "")), content if isinstance(content, Mapping) else {}
