"""The webhook server as the hub runs it: certificates, listener and refresher in one task.

`WebhookRuntime(configuration, client, provider).run()` is what the hub puts in its task
group: it gets a certificate (issued into the Secret, or read from the mounted dir, as the
Configuration says), starts listening on `webhook.host:webhook.port`, and keeps the
certificate current until cancelled, then stops listening. `ready` is set once requests
are being served, for the hub's readiness probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import structlog

from core.kube.client import KubeClient
from core.manager.configuration import Configuration
from core.manager.webhook_certs import service_dns_names
from core.manager.webhooks.cert_manager import (
    CaBundleTarget,
    InternalCertManager,
    MountedCertWatcher,
    default_targets,
)
from core.manager.webhooks.job_context import JobContextProvider
from core.manager.webhooks.kueue_review import gated_rules
from core.manager.webhooks.server import WebhookServer, create_app
from core.manager.webhooks.tls import ServingCertificate

_log = structlog.get_logger("core.manager.webhooks")


class WebhookRuntime:
    """Serves the hub's admission webhooks for as long as `run()` runs."""

    def __init__(
        self,
        configuration: Configuration,
        client: KubeClient,
        provider: JobContextProvider,
        *,
        extra_hosts: Sequence[str] = (),
        targets: Sequence[CaBundleTarget] | None = None,
    ) -> None:
        """`extra_hosts` adds names to the issued certificate (e.g. 127.0.0.1 for a hub
        the apiserver reaches by URL) on top of the webhook Service's DNS names;
        `targets` are the configurations whose caBundle is kept current (default: the
        two fleetq configurations)."""
        self.certificate = ServingCertificate()
        cert_dir = Path(configuration.webhook_cert_dir)
        self.refresher: InternalCertManager | MountedCertWatcher
        if configuration.internal_cert_management:
            hosts = service_dns_names(configuration.webhook_service_name, configuration.namespace)
            self.refresher = InternalCertManager(
                client,
                self.certificate,
                namespace=configuration.namespace,
                secret_name=configuration.webhook_secret_name,
                hosts=[*hosts, *extra_hosts],
                cert_dir=cert_dir,
                targets=default_targets() if targets is None else targets,
            )
        else:
            self.refresher = MountedCertWatcher(self.certificate, cert_dir)
        self.server = WebhookServer(
            create_app(
                provider,
                configuration.job_kinds,
                gated=gated_rules(
                    concurrent_admission=configuration.feature_gates.concurrent_admission
                ),
            ),
            self.certificate,
            host=configuration.webhook_host,
            port=configuration.webhook_port,
        )
        self.ready = asyncio.Event()

    async def _first_certificate(self) -> float | None:
        """Load the first certificate; the delay before the next check, if not the usual."""
        refresher = self.refresher
        if not isinstance(refresher, InternalCertManager):
            await asyncio.to_thread(refresher.load)
            return None
        try:
            await refresher.reconcile()
        except Exception:
            # Serving with a certificate whose caBundle is not synced yet beats not
            # serving at all; without any certificate there is nothing to serve.
            if not self.certificate.loaded:
                raise
            _log.exception("webhook.first_cert_check_failed")
            return refresher.retry_interval_seconds
        return None

    async def run(self) -> None:
        first_delay = await self._first_certificate()
        await self.server.start()
        self.ready.set()
        try:
            if isinstance(self.refresher, InternalCertManager):
                await self.refresher.run(first_delay_seconds=first_delay)
            else:
                await self.refresher.run()
        finally:
            self.ready.clear()
            await self.server.stop()
