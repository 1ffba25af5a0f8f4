"""Self-managed webhook certificates: valid chains, the right names, renewal in time."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from pathlib import Path

from cryptography import x509

from core.manager.webhook_certs import CertBundle, issue, needs_renewal, service_dns_names

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def test_service_names_cover_every_form_the_apiserver_uses() -> None:
    assert service_dns_names("fleetq-webhook", "fleetq-system") == [
        "fleetq-webhook",
        "fleetq-webhook.fleetq-system",
        "fleetq-webhook.fleetq-system.svc",
        "fleetq-webhook.fleetq-system.svc.cluster.local",
    ]


def test_issued_serving_cert_is_signed_by_the_ca_and_names_the_hosts() -> None:
    bundle = issue(["hub.fleetq-system.svc", "127.0.0.1"], NOW)
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    tls = x509.load_pem_x509_certificate(bundle.tls_cert)
    tls.verify_directly_issued_by(ca)
    sans = tls.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["hub.fleetq-system.svc"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert needs_renewal(bundle, ["hub.fleetq-system.svc", "127.0.0.1"], NOW) is None


def test_renewal_is_due_a_month_before_expiry_and_for_new_names() -> None:
    bundle = issue(["hub.svc"], NOW)
    assert needs_renewal(bundle, ["hub.svc"], NOW + dt.timedelta(days=300)) is None
    reason = needs_renewal(bundle, ["hub.svc"], NOW + dt.timedelta(days=340))
    assert reason is not None and "serving certificate expires" in reason
    assert "does not cover other.svc" in (needs_renewal(bundle, ["other.svc"], NOW) or "")


def test_a_bundle_mixing_two_cas_is_replaced() -> None:
    one, two = issue(["a"], NOW), issue(["a"], NOW)
    mixed = CertBundle(two.ca_cert, two.ca_key, one.tls_cert, one.tls_key)
    assert "not issued by the stored CA" in (needs_renewal(mixed, ["a"], NOW) or "")
    garbage = CertBundle(b"nope", b"", b"nope", b"")
    assert needs_renewal(garbage, ["a"], NOW) == "certificates cannot be parsed"


def test_secret_round_trip_and_incomplete_secrets() -> None:
    bundle = issue(["a"], NOW)
    assert CertBundle.from_secret_data(bundle.to_secret_data()) == bundle
    assert CertBundle.from_secret_data({"tls.crt": b"x"}) is None


def test_a_tls_client_trusting_the_ca_completes_a_handshake(tmp_path: Path) -> None:
    bundle = issue(["localhost", "127.0.0.1"], dt.datetime.now(dt.UTC))
    (tmp_path / "tls.crt").write_bytes(bundle.tls_cert)
    (tmp_path / "tls.key").write_bytes(bundle.tls_key)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client_ctx = ssl.create_default_context(cadata=bundle.ca_cert.decode())
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[str] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            accepted.append(tls.version() or "")

    thread = threading.Thread(target=serve)
    thread.start()
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    thread.join(timeout=5)
    listener.close()
    assert accepted
