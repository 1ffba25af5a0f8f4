"""Keeping the CRDs' conversion webhook pointed at this hub, trusting its CA.

The hub chart's CRDs serve kueue.x-k8s.io/v1beta1 by calling the hub's `/convert`
endpoint; the generated manifests name a default Service and carry no CA (helm cannot
template `crds/`). Like the caBundle of the webhook configurations, each certificate
check makes every such CRD's `spec.conversion.webhook.clientConfig` the hub's own (its
Service in cluster, its URL out of cluster) with the CAs it trusts. A CRD that does not
convert by webhook (installed by the worker chart, or an older fleetq) is left alone:
the hub never turns conversion on by itself. Writes are conditional on the
resourceVersion read; a concurrent writer makes the next attempt read again.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from core.api.conversion.versions import CONVERT_PATH, WEBHOOK_CONVERTED_KINDS
from core.api.registry import KINDS
from core.kube.client import KubeClient
from core.kube.errors import Conflict, KubeError, NotFound
from core.kube.resources import Resource
from core.manager.webhooks.ca_injection import CaBundleSync, CaBundleSyncError
from core.manager.webhooks.configurations import ServiceEndpoint, UrlEndpoint

CUSTOM_RESOURCE_DEFINITIONS: Final = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    namespaced=False,
    kind="CustomResourceDefinition",
)

CONVERTED_CRD_NAMES: Final = tuple(
    sorted(info.crd_name for info in KINDS if info.kind in WEBHOOK_CONVERTED_KINDS)
)
"""The CRDs whose versions the hub converts (the names its RBAC allows it to update)."""

_log = structlog.get_logger("core.manager.webhooks.crd_conversion")


@dataclass(frozen=True, slots=True)
class CrdConversion:
    """Where the apiserver reaches the hub's `/convert` endpoint, and which CRDs use it."""

    endpoint: ServiceEndpoint | UrlEndpoint
    crd_names: tuple[str, ...] = CONVERTED_CRD_NAMES


def with_conversion_client(
    crd: Mapping[str, Any], endpoint: ServiceEndpoint | UrlEndpoint, ca_bundle: bytes
) -> dict[str, Any] | None:
    """The CRD converting through `endpoint` trusting `ca_bundle`; None when it already
    does, or when it does not convert by webhook at all."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    webhook = conversion.get("webhook") or {}
    client_config = endpoint.client_config(CONVERT_PATH)
    if ca_bundle:
        client_config["caBundle"] = base64.b64encode(ca_bundle).decode()
    if webhook.get("clientConfig") == client_config:
        return None
    updated = copy.deepcopy(dict(crd))
    target = updated["spec"]["conversion"].setdefault("webhook", {})
    target["clientConfig"] = client_config
    target.setdefault("conversionReviewVersions", ["v1"])
    return updated


async def sync_crd_conversion(
    client: KubeClient,
    name: str,
    endpoint: ServiceEndpoint | UrlEndpoint,
    ca_bundle: bytes,
    *,
    attempts: int = 5,
) -> CaBundleSync:
    """Make CRD `name` convert through `endpoint` with `ca_bundle` (if it converts by webhook)."""
    for _ in range(attempts):
        try:
            current = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        except NotFound:
            _log.warning("webhook.crd_missing", crd=name)
            return CaBundleSync.MISSING
        updated = with_conversion_client(current, endpoint, ca_bundle)
        if updated is None:
            return CaBundleSync.UNCHANGED
        try:
            await client.replace(CUSTOM_RESOURCE_DEFINITIONS, name, updated)
        except Conflict:
            continue
        _log.info("webhook.crd_conversion_updated", crd=name)
        return CaBundleSync.UPDATED
    raise CaBundleSyncError(
        f"CustomResourceDefinition {name} changed {attempts} times while its conversion"
        " webhook was being updated"
    )


async def sync_crd_conversions(
    client: KubeClient, conversion: CrdConversion, ca_bundle: bytes
) -> list[CaBundleSync]:
    """Sync every converted CRD. A CRD the hub may not read or write (RBAC of an older
    chart) is logged and skipped: v1beta1 is then unavailable, v1beta2 and the other
    webhooks keep working."""
    results = []
    for name in conversion.crd_names:
        try:
            results.append(await sync_crd_conversion(client, name, conversion.endpoint, ca_bundle))
        except (KubeError, CaBundleSyncError) as error:
            _log.warning("webhook.crd_conversion_failed", crd=name, error=str(error))
    return results
