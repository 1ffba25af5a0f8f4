"""The converted CRDs' conversion webhook as tests see and leave it.

Every write to a CRD's spec reinitialises its storage (clients meanwhile get 429), so tests
compare resourceVersion and generation to prove a step wrote nothing, and a test that made
the CRDs its own puts the chart's conversion back (Service, no CA) and waits until each
CRD serves again.

"Serves again" means every version's watch cache answers again
(`core.manager.webhooks.crd_conversion.storage_serving` says why only such a list shows it);
v1beta1's fills through the conversion webhook, so it serves only where one answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.api.conversion.versions import V1BETA2
from core.api.crdgen.crd import conversion_webhook
from core.kube.client import KubeClient
from core.manager.webhooks.crd_conversion import (
    CONVERTED_CRD_NAMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    storage_serving,
)


@dataclass(frozen=True, slots=True)
class ConversionState:
    """One CRD's write marks and its conversion clientConfig."""

    resource_version: str
    generation: int
    client_config: dict[str, Any]


async def conversion_states(client: KubeClient) -> dict[str, ConversionState]:
    states = {}
    for name in CONVERTED_CRD_NAMES:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        states[name] = ConversionState(
            crd["metadata"]["resourceVersion"],
            crd["metadata"]["generation"],
            crd["spec"]["conversion"]["webhook"]["clientConfig"],
        )
    return states


SERVING_TIMEOUT_SECONDS = 60.0
"""Longer than a hub waits: by the integration tier's end the shared manager holds
thousands of objects for a v1beta1 cache to convert."""


async def wait_serving(client: KubeClient, versions: Sequence[str] = (V1BETA2,)) -> None:
    """Until every converted kind lists from its watch cache in each of `versions` (the
    storage reinitialised after a CRD write). v1beta1 only where a webhook converts."""
    waiting = await storage_serving(
        client, CONVERTED_CRD_NAMES, versions, timeout_seconds=SERVING_TIMEOUT_SECONDS
    )
    if waiting:
        raise TimeoutError(
            f"still 429 'storage is (re)initializing' after {SERVING_TIMEOUT_SECONDS:.0f}s:"
            f" {waiting}"
        )


async def restore_chart_conversion(client: KubeClient) -> None:
    """The chart's conversion (its Service, no CA) on every converted CRD, as helm installs it."""
    for name in CONVERTED_CRD_NAMES:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        if crd["spec"].get("conversion") != conversion_webhook():
            crd["spec"]["conversion"] = conversion_webhook()
            await client.replace(CUSTOM_RESOURCE_DEFINITIONS, name, crd)
    await wait_serving(client)
