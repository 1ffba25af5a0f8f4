"""The webhook certificates kept in a Secret, shared by every hub replica.

The Secret holds the CA and serving certificate (`core.manager.webhook_certs` keys), plus, after a
rotation, the CA it replaced and when: for a while the webhook configurations trust both
CAs, so a replica that has not picked up the new certificate yet keeps being trusted.

`CertSecret.ensure` makes the Secret hold certificates that need no renewal, whichever
replica gets there first: it creates the Secret when missing (AlreadyExists: someone was
faster, read theirs), and replaces it when the renewal policy says so, conditional on the
resourceVersion it read (Conflict: someone rotated first, read again and judge theirs).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from core.api.kube_time import parse_optional_time
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, Conflict, NotFound
from core.kube.resources import SECRETS
from core.manager.webhook_certs import CertBundle, issue, needs_renewal

PREVIOUS_CA_KEY: Final = "previous-ca.crt"
ROTATED_AT_ANNOTATION: Final = "fleetq.dev/webhook-cert-rotated-at"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"

RenewalPolicy = Callable[[CertBundle, list[str], dt.datetime], str | None]
"""Why a bundle must be replaced for these hosts at this time, or None (`needs_renewal`)."""

_log = structlog.get_logger("core.manager.webhooks.cert_secret")


class CertSecretError(RuntimeError):
    """The Secret could not be brought to a usable state (it kept changing under us)."""


@dataclass(frozen=True, slots=True)
class StoredCertificates:
    """What the Secret holds: the current bundle and, after a rotation, the CA before it."""

    bundle: CertBundle
    previous_ca: bytes = b""
    rotated_at: dt.datetime | None = None

    def trusted_cas(self, now: dt.datetime, overlap: dt.timedelta) -> bytes:
        """The caBundle to publish: the CA, and the previous one until `overlap` has passed."""
        if self.previous_ca and self.rotated_at is not None and now - self.rotated_at < overlap:
            return self.bundle.ca_cert + self.previous_ca
        return self.bundle.ca_cert


def _decoded(data: Mapping[str, Any]) -> dict[str, bytes]:
    decoded: dict[str, bytes] = {}
    for key, value in data.items():
        try:
            decoded[key] = base64.b64decode(str(value), validate=True)
        except ValueError:
            continue
    return decoded


def read_secret(secret: Mapping[str, Any]) -> StoredCertificates | None:
    """The certificates in a Secret object, or None when it holds no complete bundle."""
    data = _decoded(secret.get("data") or {})
    bundle = CertBundle.from_secret_data(data)
    if bundle is None:
        return None
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    return StoredCertificates(
        bundle=bundle,
        previous_ca=data.get(PREVIOUS_CA_KEY, b""),
        rotated_at=parse_optional_time(annotations.get(ROTATED_AT_ANNOTATION)),
    )


def _encoded(stored: StoredCertificates) -> dict[str, str]:
    data = stored.bundle.to_secret_data()
    if stored.previous_ca:
        data[PREVIOUS_CA_KEY] = stored.previous_ca
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def secret_body(
    name: str,
    namespace: str,
    stored: StoredCertificates,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Secret holding `stored`: `current` with its data replaced, or a new one."""
    metadata = dict((current or {}).get("metadata") or {"name": name, "namespace": namespace})
    annotations = dict(metadata.get("annotations") or {})
    if stored.rotated_at is not None:
        annotations[ROTATED_AT_ANNOTATION] = stored.rotated_at.isoformat()
    metadata["annotations"] = annotations
    if current is None:
        metadata["labels"] = {MANAGED_BY_LABEL: "fleetq"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": (current or {}).get("type") or "Opaque",
        "data": _encoded(stored),
    }


class CertSecret:
    """The webhook certificate Secret of one hub installation."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        hosts: list[str],
        renewal_policy: RenewalPolicy = needs_renewal,
        attempts: int = 5,
    ) -> None:
        if not hosts:
            raise ValueError("the serving certificate needs at least one host name")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.hosts = list(hosts)
        self._renewal_policy = renewal_policy
        self._attempts = attempts

    async def ensure(self, now: dt.datetime) -> StoredCertificates:
        """Certificates from the Secret that need no renewal; issue them when they do."""
        for _ in range(self._attempts):
            try:
                current = await self._client.get(SECRETS, self.name, namespace=self.namespace)
            except NotFound:
                created = await self._create(now)
                if created is not None:
                    return created
                continue
            stored = read_secret(current)
            reason = (
                "the Secret holds no complete certificate bundle"
                if stored is None
                else self._renewal_policy(stored.bundle, self.hosts, now)
            )
            if reason is None and stored is not None:
                return stored
            rotated = await self._rotate(current, stored, now, reason or "")
            if rotated is not None:
                return rotated
        raise CertSecretError(
            f"Secret {self.namespace}/{self.name} kept changing while the webhook certificate"
            f" was being issued ({self._attempts} attempts); retrying later"
        )

    async def _create(self, now: dt.datetime) -> StoredCertificates | None:
        stored = StoredCertificates(issue(self.hosts, now))
        body = secret_body(self.name, self.namespace, stored)
        try:
            await self._client.create(SECRETS, body, namespace=self.namespace)
        except AlreadyExists:
            return None
        _log.info("webhook.cert_issued", secret=f"{self.namespace}/{self.name}", hosts=self.hosts)
        return stored

    async def _rotate(
        self,
        current: Mapping[str, Any],
        old: StoredCertificates | None,
        now: dt.datetime,
        reason: str,
    ) -> StoredCertificates | None:
        stored = StoredCertificates(
            issue(self.hosts, now),
            previous_ca=old.bundle.ca_cert if old is not None else b"",
            rotated_at=now,
        )
        body = secret_body(self.name, self.namespace, stored, current)
        try:
            await self._client.replace(SECRETS, self.name, body, namespace=self.namespace)
        except (Conflict, NotFound):
            return None
        _log.info(
            "webhook.cert_rotated",
            secret=f"{self.namespace}/{self.name}",
            reason=reason,
            hosts=self.hosts,
        )
        return stored
