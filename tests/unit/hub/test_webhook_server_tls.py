"""The webhook server over real TLS: certificate hot reload without dropping the listener.

Each test starts the real `WebhookServer` on a free port of 127.0.0.1 and talks to it
with clients that trust one CA only, so which certificate is served is observed the way
the apiserver observes it: by whether the handshake verifies.
"""

from __future__ import annotations

import datetime as dt
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.manager.webhook_certs import CertBundle, issue
from core.manager.webhooks.cert_files import write_cert_dir
from core.manager.webhooks.cert_manager import MountedCertWatcher
from core.manager.webhooks.paths import JOB_VALIDATE_PATH
from core.manager.webhooks.server import WebhookServer, create_app
from core.manager.webhooks.tls import CertificateLoadError, ServingCertificate
from integrations.framework.admission_review import AdmissionRequest
from integrations.framework.webhook_context import WebhookContext as JobWebhookContext

NOW = dt.datetime.now(dt.UTC)
REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {"uid": "tls-1", "operation": "DELETE", "namespace": "ns"},
}


class NoContext:
    async def job_context(self, request: AdmissionRequest) -> JobWebhookContext:
        return JobWebhookContext()


def _trusting(bundle: CertBundle) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=bundle.ca_cert.decode())


async def _call(port: int, trust: ssl.SSLContext) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{port}{JOB_VALIDATE_PATH}", json=REVIEW, ssl=trust
        ) as response,
    ):
        assert response.status == 200
        body: dict[str, Any] = await response.json()
        return body


async def _fails_verification(port: int, trust: ssl.SSLContext) -> bool:
    try:
        await _call(port, trust)
    except aiohttp.ClientConnectorCertificateError:
        return True
    return False


@pytest.fixture(scope="module")
def bundles() -> tuple[CertBundle, CertBundle]:
    return issue(["127.0.0.1"], NOW), issue(["127.0.0.1", "localhost"], NOW)


async def test_rotation_swaps_the_served_certificate_on_the_same_listener(
    bundles: tuple[CertBundle, CertBundle],
) -> None:
    first, second = bundles
    certificate = ServingCertificate()
    assert certificate.load_pem(first.tls_cert, first.tls_key) is True
    async with WebhookServer(
        create_app(NoContext()), certificate, host="127.0.0.1", port=0
    ) as server:
        port = server.port
        assert (await _call(port, _trusting(first)))["response"]["uid"] == "tls-1"
        assert await _fails_verification(port, _trusting(second))

        before = certificate.fingerprint
        assert certificate.load_pem(second.tls_cert, second.tls_key) is True
        assert certificate.fingerprint != before
        assert server.port == port
        assert (await _call(port, _trusting(second)))["response"]["allowed"] is True
        assert await _fails_verification(port, _trusting(first))
        # Loading the same pair again is no change.
        assert certificate.load_pem(second.tls_cert, second.tls_key) is False


async def test_a_broken_certificate_keeps_the_old_one_serving(
    bundles: tuple[CertBundle, CertBundle],
) -> None:
    first, second = bundles
    certificate = ServingCertificate()
    certificate.load_pem(first.tls_cert, first.tls_key)
    async with WebhookServer(
        create_app(NoContext()), certificate, host="127.0.0.1", port=0
    ) as server:
        with pytest.raises(CertificateLoadError):
            certificate.load_pem(b"not a certificate", first.tls_key)
        with pytest.raises(CertificateLoadError):
            # A valid certificate with somebody else's key is not a pair.
            certificate.load_pem(second.tls_cert, first.tls_key)
        assert certificate.cert_pem == first.tls_cert
        assert (await _call(server.port, _trusting(first)))["response"]["allowed"] is True


async def test_mounted_files_are_followed_when_they_change(
    tmp_path: Path, bundles: tuple[CertBundle, CertBundle]
) -> None:
    first, second = bundles
    certificate = ServingCertificate()
    watcher = MountedCertWatcher(certificate, tmp_path)
    with pytest.raises(CertificateLoadError):
        watcher.load()  # nothing mounted yet
    assert write_cert_dir(tmp_path, first) is True
    assert watcher.load() is True
    async with WebhookServer(
        create_app(NoContext()), certificate, host="127.0.0.1", port=0
    ) as server:
        assert (await _call(server.port, _trusting(first)))["response"]["allowed"] is True
        assert watcher.load() is False  # unchanged files, nothing reloaded
        write_cert_dir(tmp_path, second)
        assert watcher.load() is True
        assert (await _call(server.port, _trusting(second)))["response"]["allowed"] is True


async def test_server_will_not_listen_without_a_certificate() -> None:
    server = WebhookServer(create_app(NoContext()), ServingCertificate(), port=0)
    with pytest.raises(RuntimeError, match="load a serving certificate"):
        await server.start()
