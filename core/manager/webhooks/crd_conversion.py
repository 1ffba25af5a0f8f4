"""The converted CRDs' conversion webhook: one owner per field, written only when it differs.

The hub chart's CRDs (`crds/`) own `spec.conversion`: strategy Webhook, the chart's
webhook Service (`kueue-webhook-service` in `kueue-system`, path `/convert`) and the
review versions; helm cannot template `crds/`, so they carry no CA. Who else writes what:

- a hub in cluster behind that Service only injects the `caBundle` it trusts, as a CA
  injector would; helm's server-side apply of the same `crds/` then finds its own values
  and never meets a field of ours but `caBundle`, which it does not set;
- a hub out of cluster (dev fleet, tests) is reached by URL: it owns the whole
  `clientConfig` (`url` and `caBundle`, the Service removed) of a CRD installed without
  helm (devfleet's `install_crds` keeps it; helm installs there pass `--skip-crds`).

Every write reinitialises the CRD's storage on the apiserver (clients meanwhile get 429
"storage is (re)initializing"), so the whole clientConfig and strategy are compared with
what is wanted (`conversion_change`, pure) and written only when they differ: a restart
with the same certificate and endpoint writes nothing. The hub never turns conversion on
(a CRD without strategy Webhook is left alone), and in cluster never points a CRD at a
Service that is not its own. Writes are conditional on the resourceVersion read.

After a write, "serving again" is only visible to a request the watch cache must answer
(`storage_serving`): while a version's cache initialises, the apiserver sends lists with a
`limit` and no selector to etcd, and answers other lists and watches with 429. Each served
version has its own cache; v1beta1's fills through `/convert` (a call per stored object),
so it is ready only after v1beta2's, and only while the hub answers.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import structlog

from core.api.conversion.versions import (
    CONVERSION_SERVICE_NAME,
    CONVERSION_SERVICE_NAMESPACE,
    CONVERSION_SERVICE_PORT,
    CONVERT_PATH,
    V1BETA1,
    V1BETA2,
    WEBHOOK_CONVERTED_KINDS,
)
from core.api.registry import KINDS
from core.kube.client import KubeClient
from core.kube.errors import Conflict, KubeError, NotFound, TooManyRequests
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

_CONVERTED_BY_CRD: Final = {
    info.crd_name: info for info in KINDS if info.kind in WEBHOOK_CONVERTED_KINDS
}

CHART_SERVICE: Final = ServiceEndpoint(CONVERSION_SERVICE_NAME, CONVERSION_SERVICE_NAMESPACE)
"""The Service the charts' CRDs name; an in-cluster hub converts only behind it."""

_log = structlog.get_logger("core.manager.webhooks.crd_conversion")


@dataclass(frozen=True, slots=True)
class CrdConversion:
    """Where the apiserver reaches the hub's `/convert` endpoint, and which CRDs use it."""

    endpoint: ServiceEndpoint | UrlEndpoint
    crd_names: tuple[str, ...] = CONVERTED_CRD_NAMES


class ConversionOutcome(enum.StrEnum):
    """What `conversion_change` decided for one CRD."""

    KEEP = "Keep"
    """Already what is wanted: nothing to write."""
    WRITE = "Write"
    LEAVE = "Leave"
    """Not the hub's to change (no webhook conversion, or another Service's)."""


@dataclass(frozen=True, slots=True)
class ConversionChange:
    """The decision for one CRD, with what to write if anything."""

    outcome: ConversionOutcome
    crd: dict[str, Any] | None = None
    """The CRD to write (WRITE only)."""
    reason: str = ""
    """Why it is left alone (LEAVE only)."""


def wanted_client_config(
    endpoint: ServiceEndpoint | UrlEndpoint, ca_bundle: bytes
) -> dict[str, Any]:
    """The clientConfig that makes the apiserver call `endpoint` trusting `ca_bundle`."""
    wanted = endpoint.client_config(CONVERT_PATH)
    if ca_bundle:
        wanted["caBundle"] = base64.b64encode(ca_bundle).decode()
    return wanted


def _comparable(client_config: Mapping[str, Any]) -> dict[str, Any]:
    """The clientConfig as the apiserver means it: the Service port defaults to 443, an
    empty caBundle is none."""
    comparable = {key: value for key, value in client_config.items() if value}
    service = comparable.get("service")
    if isinstance(service, Mapping):
        comparable["service"] = {"port": CONVERSION_SERVICE_PORT, **service}
    return comparable


def foreign_service(endpoint: ServiceEndpoint | UrlEndpoint) -> str | None:
    """Why a hub in cluster behind `endpoint` must leave the CRDs alone (pointing them at
    its own Service would fight helm's apply of `crds/`), or None."""
    if not isinstance(endpoint, ServiceEndpoint) or endpoint == CHART_SERVICE:
        return None
    return (
        f"the CRDs convert through Service {CHART_SERVICE.namespace}/{CHART_SERVICE.name},"
        f" not this hub's {endpoint.namespace}/{endpoint.name}: v1beta1 of the converted"
        f" kinds needs the hub chart installed in {CHART_SERVICE.namespace}"
    )


def conversion_change(
    crd: Mapping[str, Any], endpoint: ServiceEndpoint | UrlEndpoint, ca_bundle: bytes
) -> ConversionChange:
    """What the hub at `endpoint`, trusting `ca_bundle`, should do to `crd` (not modified)."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return ConversionChange(ConversionOutcome.LEAVE, reason="does not convert by webhook")
    reason = foreign_service(endpoint)
    if reason is not None:
        return ConversionChange(ConversionOutcome.LEAVE, reason=reason)
    wanted = wanted_client_config(endpoint, ca_bundle)
    current = (conversion.get("webhook") or {}).get("clientConfig") or {}
    if _comparable(current) == _comparable(wanted):
        return ConversionChange(ConversionOutcome.KEEP)
    updated = copy.deepcopy(dict(crd))
    webhook = updated["spec"]["conversion"].setdefault("webhook", {})
    webhook["clientConfig"] = wanted
    webhook.setdefault("conversionReviewVersions", ["v1"])
    return ConversionChange(ConversionOutcome.WRITE, crd=updated)


async def sync_crd_conversion(
    client: KubeClient,
    name: str,
    endpoint: ServiceEndpoint | UrlEndpoint,
    ca_bundle: bytes,
    *,
    attempts: int = 5,
) -> CaBundleSync:
    """Make CRD `name` convert through `endpoint` with `ca_bundle`, if that is the hub's
    to do and not already so."""
    for _ in range(attempts):
        try:
            current = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        except NotFound:
            _log.warning("webhook.crd_missing", crd=name)
            return CaBundleSync.MISSING
        change = conversion_change(current, endpoint, ca_bundle)
        if change.outcome is ConversionOutcome.LEAVE:
            _log.warning("webhook.crd_conversion_left_alone", crd=name, reason=change.reason)
            return CaBundleSync.UNCHANGED
        if change.crd is None:
            return CaBundleSync.UNCHANGED
        try:
            await client.replace(CUSTOM_RESOURCE_DEFINITIONS, name, change.crd)
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
    webhooks keep working. In cluster behind another Service than the CRDs name, the hub
    says so once per check and leaves them all alone."""
    reason = foreign_service(conversion.endpoint)
    if reason is not None:
        _log.warning("webhook.crd_conversion_left_alone", crds="all", reason=reason)
        return []
    results = []
    for name in conversion.crd_names:
        try:
            results.append(await sync_crd_conversion(client, name, conversion.endpoint, ca_bundle))
        except (KubeError, CaBundleSyncError) as error:
            _log.warning("webhook.crd_conversion_failed", crd=name, error=str(error))
    return results


STORAGE_PROBE_SELECTOR: Final = "fleetq.dev/storage-probe=none"
"""With resourceVersion=0 and no limit, a list only the watch cache answers (never etcd);
the selector matches nothing, so the answer costs no conversion."""
SERVED_VERSIONS: Final = (V1BETA2, V1BETA1)
STORAGE_WAIT_SECONDS: Final = 30.0
"""How long a hub that wrote the CRDs holds its readiness back for them (a v1beta1 cache
converts every stored object of its kind through `/convert` first: seconds for thousands)."""
STORAGE_POLL_SECONDS: Final = 0.2


async def storage_serving(
    client: KubeClient,
    crd_names: Sequence[str] = CONVERTED_CRD_NAMES,
    versions: Sequence[str] = SERVED_VERSIONS,
    *,
    timeout_seconds: float = STORAGE_WAIT_SECONDS,
    poll_seconds: float = STORAGE_POLL_SECONDS,
) -> list[str]:
    """Wait until each converted CRD in `crd_names` answers from its watch cache in every
    one of `versions` (its storage reinitialised after a write); the `crd/version` pairs
    still answering 429 when `timeout_seconds` ran out (none: all serving)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds
    waiting: list[str] = []
    for name in crd_names:
        info = _CONVERTED_BY_CRD[name]
        for version in versions:
            while True:
                try:
                    await client.list(
                        dataclasses.replace(info, version=version),
                        label_selector=STORAGE_PROBE_SELECTOR,
                        resource_version="0",
                    )
                    break
                except TooManyRequests:
                    if loop.time() >= deadline:
                        waiting.append(f"{name}/{version}")
                        break
                    await asyncio.sleep(poll_seconds)
    return waiting
