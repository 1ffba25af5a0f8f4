"""Keeping the `caBundle` of the hub's webhook configurations equal to the CAs it trusts.

The apiserver only calls a webhook whose certificate chains to the configuration's
`caBundle`, so after each issue or rotation every webhook entry must carry the current
bundle. Each configuration is read, compared, and written back (with its
resourceVersion) only when some entry differs: a steady state costs one GET per check,
and a concurrent writer (another replica, helm) makes the write fail with Conflict, after
which it is read and compared again.
"""

from __future__ import annotations

import base64
import copy
import enum
from collections.abc import Mapping
from typing import Any

import structlog

from core.kube.client import KubeClient
from core.kube.errors import Conflict, NotFound
from core.kube.resources import Resource

_log = structlog.get_logger("core.manager.webhooks.ca_injection")


class CaBundleSync(enum.StrEnum):
    """What a sync did to one configuration."""

    UNCHANGED = "Unchanged"
    UPDATED = "Updated"
    MISSING = "Missing"
    """The configuration does not exist (yet): nothing to update."""


class CaBundleSyncError(RuntimeError):
    """The configuration kept changing under us; the next check tries again."""


def with_ca_bundle(configuration: Mapping[str, Any], ca_bundle: bytes) -> dict[str, Any] | None:
    """The configuration with every webhook trusting `ca_bundle`; None if all already do."""
    encoded = base64.b64encode(ca_bundle).decode()
    webhooks = configuration.get("webhooks") or []
    if all((webhook.get("clientConfig") or {}).get("caBundle") == encoded for webhook in webhooks):
        return None
    updated = copy.deepcopy(dict(configuration))
    for webhook in updated["webhooks"]:
        webhook.setdefault("clientConfig", {})["caBundle"] = encoded
    return updated


async def sync_ca_bundle(
    client: KubeClient,
    resource: Resource,
    name: str,
    ca_bundle: bytes,
    *,
    attempts: int = 5,
) -> CaBundleSync:
    """Make configuration `name` of `resource` trust exactly `ca_bundle`."""
    for _ in range(attempts):
        try:
            current = await client.get(resource, name)
        except NotFound:
            _log.warning("webhook.configuration_missing", kind=resource.kind, name=name)
            return CaBundleSync.MISSING
        updated = with_ca_bundle(current, ca_bundle)
        if updated is None:
            return CaBundleSync.UNCHANGED
        try:
            await client.replace(resource, name, updated)
        except Conflict:
            continue
        _log.info("webhook.ca_bundle_updated", kind=resource.kind, name=name)
        return CaBundleSync.UPDATED
    raise CaBundleSyncError(
        f"{resource.kind} {name} changed {attempts} times while its caBundle was being updated"
    )
