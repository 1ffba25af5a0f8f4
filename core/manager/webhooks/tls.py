"""The certificate the webhook listener presents, replaceable while it keeps listening.

The listener's SSLContext carries no certificate of its own: on every handshake its SNI
callback (OpenSSL calls it also when the client sends no server name, as the apiserver
does for IP addresses) points the connection at the context currently held here. A
rotation builds a complete new context first and swaps one reference, so a handshake sees
either the old certificate or the new one, never a half-loaded pair, and a certificate
that fails to load leaves the old one serving. Open connections keep what they started with.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding


class CertificateLoadError(ValueError):
    """The certificate or key cannot be used (unreadable, malformed, or not a pair)."""


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class ServingCertificate:
    """Holds the serving certificate; `listener_context()` is what the server binds with."""

    def __init__(self) -> None:
        self._current: ssl.SSLContext | None = None
        self._cert_pem = b""
        self._listener = _server_context()
        self._listener.sni_callback = self._select

    @property
    def loaded(self) -> bool:
        return self._current is not None

    @property
    def cert_pem(self) -> bytes:
        """The PEM of the certificate being served (empty before the first load)."""
        return self._cert_pem

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the served certificate, for logs and for telling rotations apart."""
        if not self._cert_pem:
            return ""
        cert = x509.load_pem_x509_certificate(self._cert_pem)
        return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()

    def listener_context(self) -> ssl.SSLContext:
        return self._listener

    def load_files(self, cert_file: Path, key_file: Path) -> bool:
        """Serve the pair in these files; False when it is what is served already."""
        try:
            cert_pem = cert_file.read_bytes()
        except OSError as error:
            raise CertificateLoadError(f"cannot read {cert_file}: {error}") from error
        if cert_pem == self._cert_pem:
            return False
        self._swap(_context_from_files(cert_file, key_file), cert_pem)
        return True

    def load_pem(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Serve this in-memory pair; False when it is what is served already."""
        if cert_pem == self._cert_pem:
            return False
        # ssl loads chains from files only: hand it a private, short-lived copy.
        with tempfile.TemporaryDirectory(prefix="fleetq-webhook-") as directory:
            cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
            _write_private(cert_file, cert_pem)
            _write_private(key_file, key_pem)
            context = _context_from_files(cert_file, key_file)
        self._swap(context, cert_pem)
        return True

    def _swap(self, context: ssl.SSLContext, cert_pem: bytes) -> None:
        self._current = context
        self._cert_pem = cert_pem

    def _select(self, connection: ssl.SSLObject, _server_name: str | None, _: object) -> None:
        # Without a certificate yet the handshake fails: better than serving none.
        if self._current is not None:
            connection.context = self._current


def _context_from_files(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = _server_context()
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as error:
        raise CertificateLoadError(
            f"cannot load the serving certificate {cert_file} with key {key_file}: {error}"
        ) from error
    return context


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
