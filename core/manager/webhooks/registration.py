"""Creating and removing the webhook configurations themselves.

In a cluster the chart owns them; out of cluster (dev fleet, tests) the hub or the test
registers URL-based ones. Server-side apply makes registering idempotent: applying the
same settings twice changes nothing, applying new ones moves every field we own.
"""

from __future__ import annotations

import contextlib

from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.manager.field_manager import FIELD_MANAGER
from core.manager.webhooks.configurations import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    WebhookSettings,
    mutating_configuration,
    validating_configuration,
)


async def apply_configurations(
    client: KubeClient, settings: WebhookSettings, *, field_manager: str = FIELD_MANAGER
) -> None:
    """Create or update both configurations as `settings` describe them."""
    await client.apply(
        MUTATING_WEBHOOK_CONFIGURATIONS,
        settings.mutating_name,
        mutating_configuration(settings),
        field_manager=field_manager,
    )
    await client.apply(
        VALIDATING_WEBHOOK_CONFIGURATIONS,
        settings.validating_name,
        validating_configuration(settings),
        field_manager=field_manager,
    )


async def delete_configurations(client: KubeClient, settings: WebhookSettings) -> None:
    """Remove both configurations (already gone is fine)."""
    for resource, name in (
        (MUTATING_WEBHOOK_CONFIGURATIONS, settings.mutating_name),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, settings.validating_name),
    ):
        with contextlib.suppress(NotFound):
            await client.delete(resource, name)
