"""A real node's credentials, issued by the fleet's own CA (kwokctl's PKI).

The kubelet authenticates as `system:node:<name>` in group `system:nodes`, so the
apiserver's Node authorizer and NodeRestriction admission treat it as a node: it may read
only the Secrets, ConfigMaps and tokens of pods bound to it. Its kubeconfig holds the
manager's loopback address (the kubelet runs on this machine) and file references to the
certificate and key written beside it.
"""

from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class ClusterPki:
    """The CA a kwokctl cluster signs with: `<workdir>/clusters/<name>/pki/ca.{crt,key}`."""

    ca_cert: Path
    ca_key: Path

    @classmethod
    def of_kwok_cluster(cls, kwok_workdir: Path, cluster: str) -> ClusterPki:
        pki = kwok_workdir / "clusters" / cluster / "pki"
        return cls(pki / "ca.crt", pki / "ca.key")


def write_node_kubeconfig(pki: ClusterPki, node: str, server: str, directory: Path) -> Path:
    """A client certificate for `system:node:<node>` and the kubelet's kubeconfig using it."""
    with warnings.catch_warnings():
        # kwokctl's CA has a non-positive serial number; cryptography warns and still loads it.
        warnings.simplefilter("ignore", CryptographyDeprecationWarning)
        ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "kubelet-client.crt", directory / "kubelet-client.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    user = f"system:node:{node}"
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "manager",
                "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate": str(cert_path), "client-key": str(key_path)},
            }
        ],
        "contexts": [{"name": "node", "context": {"cluster": "manager", "user": user}}],
        "current-context": "node",
    }
    path = directory / "kubelet.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    path.chmod(0o600)
    return path
