"""Serving certificates for the delegated-auth servers load into a working TLS context."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509

from core.manager.serving_tls import ServingCertificate, server_context, trust_client_cas


def test_self_signed_certificate_covers_the_names_and_is_signed_by_its_ca() -> None:
    certificate = ServingCertificate.self_signed(
        ["fleetq-visibility.fleetq-system.svc", "10.1.2.3"]
    )
    cert = x509.load_pem_x509_certificate(certificate.cert_pem)
    ca = x509.load_pem_x509_certificate(certificate.ca_pem)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "fleetq-visibility.fleetq-system.svc" in names.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]


def test_certificate_from_a_mounted_secret_directory(tmp_path: Path) -> None:
    issued = ServingCertificate.self_signed(["hub.example"])
    (tmp_path / "tls.crt").write_bytes(issued.cert_pem)
    (tmp_path / "tls.key").write_bytes(issued.key_pem)
    loaded = ServingCertificate.from_dir(tmp_path)
    assert (loaded.cert_pem, loaded.key_pem) == (issued.cert_pem, issued.key_pem)
    assert server_context(loaded).verify_mode == ssl.CERT_NONE  # no client CAs yet


def test_client_certificates_are_asked_for_once_a_ca_is_trusted() -> None:
    serving = ServingCertificate.self_signed(["hub.example"])
    client_ca = ServingCertificate.self_signed(["client.example"]).ca_pem
    context = server_context(serving, client_ca)
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert len(context.get_ca_certs()) == 1
    trust_client_cas(context, ServingCertificate.self_signed(["other"]).ca_pem)
    assert len(context.get_ca_certs()) == 2


def test_a_key_that_does_not_match_is_refused() -> None:
    one = ServingCertificate.self_signed(["a"])
    other = ServingCertificate.self_signed(["b"])
    with pytest.raises(ssl.SSLError):
        server_context(ServingCertificate(cert_pem=one.cert_pem, key_pem=other.key_pem))
