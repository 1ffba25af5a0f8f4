"""TLS for the hub's delegated-auth servers: a serving certificate, and client CAs to ask for.

The server asks every client for a certificate (optional: token users have none) and
verifies it against the cluster's client and request-header CAs, so a forged proxy
certificate never completes the handshake; which CA signed it, and so whether its
`X-Remote-*` headers count, is decided per request in `authentication`. A serving
certificate comes from files (a mounted Secret) or is issued at start for the given
names, as upstream's visibility server does when it has none.
"""

from __future__ import annotations

import datetime as dt
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from core.manager import webhook_certs


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A PEM certificate (chain) and its key; `ca_pem` is what clients should trust."""

    cert_pem: bytes = field(repr=False)
    key_pem: bytes = field(repr=False)
    ca_pem: bytes = field(default=b"", repr=False)

    @classmethod
    def from_files(cls, cert_file: Path, key_file: Path) -> ServingCertificate:
        return cls(cert_pem=cert_file.read_bytes(), key_pem=key_file.read_bytes())

    @classmethod
    def from_dir(cls, directory: Path) -> ServingCertificate:
        """`tls.crt` and `tls.key` of a mounted kubernetes.io/tls Secret."""
        return cls.from_files(directory / "tls.crt", directory / "tls.key")

    @classmethod
    def self_signed(cls, hosts: list[str], now: dt.datetime | None = None) -> ServingCertificate:
        """A fresh CA and a certificate for `hosts` (DNS names or IPs) that it signed."""
        bundle = webhook_certs.issue(
            hosts, now or dt.datetime.now(dt.UTC), common_name="fleetq-visibility"
        )
        return cls(cert_pem=bundle.tls_cert, key_pem=bundle.tls_key, ca_pem=bundle.ca_cert)


def _load_chain(context: ssl.SSLContext, certificate: ServingCertificate) -> None:
    # ssl only loads key material from files; keep them private and short-lived.
    with tempfile.TemporaryDirectory(prefix="fleetq-tls-") as directory:
        cert_path = os.path.join(directory, "tls.crt")
        key_path = os.path.join(directory, "tls.key")
        for path, data in ((cert_path, certificate.cert_pem), (key_path, certificate.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_path, key_path)


def server_context(certificate: ServingCertificate, client_ca_pem: bytes = b"") -> ssl.SSLContext:
    """A TLS 1.2+ server context that asks for (but does not require) a client certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(context, certificate)
    trust_client_cas(context, client_ca_pem)
    return context


def trust_client_cas(context: ssl.SSLContext, client_ca_pem: bytes) -> None:
    """Also accept client certificates from these CAs (a context can only ever add)."""
    if not client_ca_pem.strip():
        return
    context.load_verify_locations(cadata=client_ca_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL
