"""The converted CRDs' conversion webhook as tests see and leave it.

Every write to a CRD's spec reinitialises its storage (clients meanwhile get 429), so tests
compare resourceVersion and generation to prove a step wrote nothing, and a test that made
the CRDs its own puts the chart's conversion back (Service, no CA) and waits until each
CRD serves again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from core.api.crdgen.crd import conversion_webhook
from core.api.registry import BY_KIND
from core.kube.client import KubeClient
from core.kube.errors import ApiError
from core.manager.webhooks.crd_conversion import CONVERTED_CRD_NAMES, CUSTOM_RESOURCE_DEFINITIONS

SERVING_TIMEOUT_SECONDS = 30.0
_BY_CRD = {info.crd_name: info for info in BY_KIND.values()}


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


async def wait_serving(client: KubeClient, timeout: float = SERVING_TIMEOUT_SECONDS) -> None:
    """Until every converted kind lists in v1beta2 again (its storage reinitialised)."""
    deadline = asyncio.get_running_loop().time() + timeout
    for name in CONVERTED_CRD_NAMES:
        while True:
            try:
                await client.list(_BY_CRD[name], limit=1)
                break
            except ApiError as error:
                if error.status != 429 or asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.2)


async def restore_chart_conversion(client: KubeClient) -> None:
    """The chart's conversion (its Service, no CA) on every converted CRD, as helm installs it."""
    for name in CONVERTED_CRD_NAMES:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        if crd["spec"].get("conversion") != conversion_webhook():
            crd["spec"]["conversion"] = conversion_webhook()
            await client.replace(CUSTOM_RESOURCE_DEFINITIONS, name, crd)
    await wait_serving(client)
