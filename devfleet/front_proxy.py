"""A front proxy for the fleet's apiservers, so aggregated APIs work as in a real cluster.

The visibility API (`visibility.kueue.x-k8s.io`) is served by the hub behind an
APIService. For the apiserver to proxy to it, the apiserver needs a front-proxy client
certificate, the CA that signed it (published in kube-system's
`extension-apiserver-authentication` ConfigMap, which the hub reads to trust the proxied
user headers) and `--enable-aggregator-routing`, so it dials the APIService's endpoint
directly (no kube-proxy here). A fleet makes one such PKI and starts every apiserver with
these flags.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PROXY_CLIENT_NAME = "front-proxy-client"
VALID_FOR = dt.timedelta(days=30)


@dataclass(frozen=True, slots=True)
class FrontProxyPki:
    ca: Path
    cert: Path
    key: Path


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_front_proxy_pki(directory: Path) -> FrontProxyPki:
    """A front-proxy CA and the client certificate the apiserver proxies with."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    client = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, PROXY_CLIENT_NAME)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    pki = FrontProxyPki(
        directory / "front-proxy-ca.crt",
        directory / "front-proxy-client.crt",
        directory / "front-proxy-client.key",
    )
    pki.ca.write_bytes(_pem(ca))
    pki.cert.write_bytes(_pem(client))
    pki.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pki.key.chmod(0o600)
    return pki


def apiserver_flags(pki: FrontProxyPki) -> dict[str, str]:
    """kube-apiserver flags (without dashes) that make it a front proxy for aggregated APIs."""
    return {
        "requestheader-client-ca-file": str(pki.ca),
        "requestheader-allowed-names": PROXY_CLIENT_NAME,
        "requestheader-username-headers": "X-Remote-User",
        "requestheader-group-headers": "X-Remote-Group",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-",
        "proxy-client-cert-file": str(pki.cert),
        "proxy-client-key-file": str(pki.key),
        "enable-aggregator-routing": "true",
    }


def kwokctl_args(pki: FrontProxyPki) -> list[str]:
    """The same flags as `kwokctl create cluster --extra-args` pairs."""
    pairs = [f"kube-apiserver={name}={value}" for name, value in apiserver_flags(pki).items()]
    return [arg for pair in pairs for arg in ("--extra-args", pair)]
