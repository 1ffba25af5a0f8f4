"""Certificates for the hub's webhook server when it manages them itself.

The apiserver calls admission webhooks over TLS and must trust the server's certificate.
Like upstream's internal certificate management, the hub keeps a self-signed CA and a
serving certificate for its webhook Service's DNS names in one Secret, and puts the CA
into the webhook configurations' `caBundle`. This module is the pure part: making the
certificates and deciding when they must be renewed (well before they expire, so a
rotation never races an apiserver call).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIME = dt.timedelta(days=3650)
SERVING_LIFETIME = dt.timedelta(days=365)
RENEW_BEFORE = dt.timedelta(days=30)

# Secret keys, as upstream's cert Secret uses them.
CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"


@dataclass(frozen=True)
class CertBundle:
    """A CA and a serving certificate it signed, PEM encoded."""

    ca_cert: bytes
    ca_key: bytes
    tls_cert: bytes
    tls_key: bytes

    def to_secret_data(self) -> dict[str, bytes]:
        return {
            CA_CERT_KEY: self.ca_cert,
            CA_KEY_KEY: self.ca_key,
            TLS_CERT_KEY: self.tls_cert,
            TLS_KEY_KEY: self.tls_key,
        }

    @classmethod
    def from_secret_data(cls, data: dict[str, bytes]) -> CertBundle | None:
        """None when a key is missing (a Secret someone else created or half-wrote)."""
        try:
            return cls(data[CA_CERT_KEY], data[CA_KEY_KEY], data[TLS_CERT_KEY], data[TLS_KEY_KEY])
        except KeyError:
            return None


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the apiserver may use to reach a webhook Service."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def issue(hosts: list[str], now: dt.datetime, common_name: str = "fleetq-webhook") -> CertBundle:
    """A fresh CA and a serving certificate for `hosts` (DNS names or IP addresses)."""
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name}-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    tls_key = _key()
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    tls_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(tls_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + SERVING_LIFETIME)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return CertBundle(
        ca_cert.public_bytes(serialization.Encoding.PEM),
        _pem_key(ca_key),
        tls_cert.public_bytes(serialization.Encoding.PEM),
        _pem_key(tls_key),
    )


def needs_renewal(bundle: CertBundle, hosts: list[str], now: dt.datetime) -> str | None:
    """Why the bundle must be replaced (expiring, wrong names, not signed by its CA), or None."""
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_cert)
        tls = x509.load_pem_x509_certificate(bundle.tls_cert)
    except ValueError:
        return "certificates cannot be parsed"
    for name, cert in (("CA", ca), ("serving certificate", tls)):
        if cert.not_valid_after_utc - now < RENEW_BEFORE:
            return f"{name} expires at {cert.not_valid_after_utc.isoformat()}"
    try:
        tls.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return "serving certificate was not issued by the stored CA"
    try:
        present = tls.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "serving certificate has no subject alternative names"
    names = {str(n) for n in present.get_values_for_type(x509.DNSName)}
    names |= {str(ip) for ip in present.get_values_for_type(x509.IPAddress)}
    missing = [h for h in hosts if h not in names]
    if missing:
        return f"serving certificate does not cover {', '.join(missing)}"
    return None
