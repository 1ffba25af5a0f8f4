"""Keeping the webhook server's certificate valid and trusted, for as long as the hub runs.

Two modes, as upstream's `internalCertManagement.enable` chooses:

- `InternalCertManager` (enabled): the hub is its own CA. Each check makes the Secret
  hold a bundle that needs no renewal (`CertSecret.ensure`: issue, or rotate when it
  expires within `RENEW_BEFORE`, covers other names, or is broken), writes it to the cert
  dir, makes every webhook configuration trust it (`caBundle`: the new CA and, for a
  while, the one it replaced), waits a moment for apiservers to see that, and only then
  serves it, so the apiserver never meets a certificate it does not trust yet. Every
  replica runs it; the one that loses a race adopts the winner's certificate.
- `MountedCertWatcher` (disabled): someone else (cert-manager, a chart) mounts
  `tls.crt`/`tls.key` and keeps the caBundle current; the hub re-reads the files when they
  change and serves the new pair without restarting the listener.

Both re-check periodically; a failed check is logged and retried sooner, and the server
keeps serving the certificate it has meanwhile.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from core.kube.client import KubeClient
from core.kube.resources import Resource
from core.manager.webhook_certs import needs_renewal
from core.manager.webhooks.ca_injection import CaBundleSync, sync_ca_bundle
from core.manager.webhooks.cert_files import cert_file, key_file, write_cert_dir
from core.manager.webhooks.cert_secret import CertSecret, RenewalPolicy, StoredCertificates
from core.manager.webhooks.configurations import (
    MUTATING_CONFIGURATION_NAME,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_CONFIGURATION_NAME,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from core.manager.webhooks.tls import CertificateLoadError, ServingCertificate

CHECK_INTERVAL_SECONDS: Final = 3600.0
RETRY_INTERVAL_SECONDS: Final = 30.0
MOUNT_POLL_SECONDS: Final = 10.0
CA_PROPAGATION_SECONDS: Final = 5.0

Clock = Callable[[], dt.datetime]

_log = structlog.get_logger("core.manager.webhooks.cert_manager")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True, slots=True)
class CaBundleTarget:
    """A webhook configuration whose caBundle the hub keeps current."""

    resource: Resource
    name: str


def default_targets(
    mutating_name: str = MUTATING_CONFIGURATION_NAME,
    validating_name: str = VALIDATING_CONFIGURATION_NAME,
) -> tuple[CaBundleTarget, ...]:
    return (
        CaBundleTarget(MUTATING_WEBHOOK_CONFIGURATIONS, mutating_name),
        CaBundleTarget(VALIDATING_WEBHOOK_CONFIGURATIONS, validating_name),
    )


class InternalCertManager:
    """Issues, rotates, distributes and serves the hub's self-signed webhook certificate."""

    def __init__(
        self,
        client: KubeClient,
        certificate: ServingCertificate,
        *,
        namespace: str,
        secret_name: str,
        hosts: list[str],
        cert_dir: Path | None = None,
        targets: Sequence[CaBundleTarget] = default_targets(),
        clock: Clock = utc_now,
        renewal_policy: RenewalPolicy = needs_renewal,
        check_interval_seconds: float = CHECK_INTERVAL_SECONDS,
        retry_interval_seconds: float = RETRY_INTERVAL_SECONDS,
        ca_overlap: dt.timedelta | None = None,
        ca_propagation_seconds: float = CA_PROPAGATION_SECONDS,
    ) -> None:
        self._client = client
        self._certificate = certificate
        self.secret = CertSecret(
            client,
            namespace=namespace,
            name=secret_name,
            hosts=hosts,
            renewal_policy=renewal_policy,
        )
        self._cert_dir = cert_dir
        self._targets = tuple(targets)
        self._clock = clock
        self._check_interval = check_interval_seconds
        self.retry_interval_seconds = retry_interval_seconds
        # Other replicas adopt a rotation at their next check: trust the old CA past that.
        self._ca_overlap = ca_overlap or dt.timedelta(seconds=3 * check_interval_seconds)
        self._ca_propagation = ca_propagation_seconds
        self.published_ca_bundle = b""

    async def reconcile(self) -> StoredCertificates:
        """One check: Secret current, files written, caBundles synced, certificate served."""
        now = self._clock()
        stored = await self.secret.ensure(now)
        if self._cert_dir is not None:
            await asyncio.to_thread(write_cert_dir, self._cert_dir, stored.bundle)
        ca_bundle = stored.trusted_cas(now, self._ca_overlap)
        try:
            results = [await self._sync(target, ca_bundle) for target in self._targets]
        except Exception:
            # Never leave the server without a certificate; otherwise keep serving the one
            # the apiserver trusts until the caBundle is in place.
            if not self._certificate.loaded:
                self._serve(stored)
            raise
        self.published_ca_bundle = ca_bundle
        rotating = self._certificate.loaded and stored.bundle.tls_cert != self._certificate.cert_pem
        if rotating and CaBundleSync.UPDATED in results:
            # Apiservers learn the new caBundle from their watch a moment after it is
            # written; swapping before that would fail their calls in between.
            await asyncio.sleep(self._ca_propagation)
        self._serve(stored)
        return stored

    async def _sync(self, target: CaBundleTarget, ca_bundle: bytes) -> CaBundleSync:
        return await sync_ca_bundle(self._client, target.resource, target.name, ca_bundle)

    def _serve(self, stored: StoredCertificates) -> None:
        if self._certificate.load_pem(stored.bundle.tls_cert, stored.bundle.tls_key):
            _log.info("webhook.serving_certificate", fingerprint=self._certificate.fingerprint)

    async def run(self, *, first_delay_seconds: float | None = None) -> None:
        """Re-check until cancelled (call `reconcile` once before serving)."""
        delay = self._check_interval if first_delay_seconds is None else first_delay_seconds
        while True:
            await asyncio.sleep(delay)
            try:
                await self.reconcile()
            except Exception:
                _log.exception(
                    "webhook.cert_check_failed", retry_in_seconds=self.retry_interval_seconds
                )
                delay = self.retry_interval_seconds
            else:
                delay = self._check_interval


class MountedCertWatcher:
    """Serves the pair mounted in `cert_dir` and follows it when it changes."""

    def __init__(
        self,
        certificate: ServingCertificate,
        cert_dir: Path,
        *,
        poll_interval_seconds: float = MOUNT_POLL_SECONDS,
    ) -> None:
        self._certificate = certificate
        self._cert_dir = cert_dir
        self._poll_interval = poll_interval_seconds

    def load(self) -> bool:
        """Serve the mounted pair; raises CertificateLoadError when it cannot be used."""
        changed = self._certificate.load_files(cert_file(self._cert_dir), key_file(self._cert_dir))
        if changed:
            _log.info(
                "webhook.serving_certificate",
                source=str(self._cert_dir),
                fingerprint=self._certificate.fingerprint,
            )
        return changed

    async def run(self) -> None:
        """Poll for a changed pair until cancelled; a bad pair keeps the old one serving."""
        while True:
            await asyncio.sleep(self._poll_interval)
            try:
                await asyncio.to_thread(self.load)
            except CertificateLoadError as error:
                _log.warning("webhook.mounted_cert_unusable", error=str(error))
