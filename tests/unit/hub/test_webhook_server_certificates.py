"""Certificates at rest: the Secret's layout, the CA overlap after rotation, the cert dir."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

from core.manager.webhook_certs import issue
from core.manager.webhooks.cert_files import write_cert_dir
from core.manager.webhooks.cert_secret import (
    ROTATED_AT_ANNOTATION,
    StoredCertificates,
    read_secret,
    secret_body,
)

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


def test_secret_round_trip_keeps_bundle_previous_ca_and_rotation_time() -> None:
    old, new = issue(["svc"], NOW), issue(["svc"], NOW)
    stored = StoredCertificates(new, previous_ca=old.ca_cert, rotated_at=NOW)
    body = secret_body("certs", "fleetq-system", stored)
    assert body["metadata"]["name"] == "certs"
    assert body["metadata"]["namespace"] == "fleetq-system"
    assert body["metadata"]["annotations"][ROTATED_AT_ANNOTATION] == NOW.isoformat()
    assert body["type"] == "Opaque"
    assert set(body["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key", "previous-ca.crt"}
    assert read_secret(body) == stored


def test_replacing_keeps_the_secrets_identity_and_other_metadata() -> None:
    current = {
        "metadata": {
            "name": "certs",
            "namespace": "ns",
            "resourceVersion": "42",
            "labels": {"helm": "yes"},
            "annotations": {"keep": "me"},
        },
        "type": "kubernetes.io/tls",
        "data": {},
    }
    assert read_secret(current) is None  # nothing usable yet
    stored = StoredCertificates(issue(["svc"], NOW), rotated_at=NOW)
    body = secret_body("certs", "ns", stored, current)
    assert body["metadata"]["resourceVersion"] == "42"  # the write is conditional
    assert body["metadata"]["labels"] == {"helm": "yes"}
    assert body["metadata"]["annotations"]["keep"] == "me"
    assert body["type"] == "kubernetes.io/tls"
    assert read_secret(body) == stored


def test_previous_ca_is_trusted_only_during_the_overlap() -> None:
    old, new = issue(["svc"], NOW), issue(["svc"], NOW)
    stored = StoredCertificates(new, previous_ca=old.ca_cert, rotated_at=NOW)
    assert stored.trusted_cas(NOW + HOUR, 3 * HOUR) == new.ca_cert + old.ca_cert
    assert stored.trusted_cas(NOW + 3 * HOUR, 3 * HOUR) == new.ca_cert
    assert StoredCertificates(new).trusted_cas(NOW, 3 * HOUR) == new.ca_cert


def test_cert_dir_is_written_atomically_and_only_when_changed(tmp_path: Path) -> None:
    directory = tmp_path / "serving-certs"
    first, second = issue(["svc"], NOW), issue(["svc"], NOW)
    assert write_cert_dir(directory, first) is True
    assert (directory / "tls.crt").read_bytes() == first.tls_cert
    assert (directory / "tls.key").read_bytes() == first.tls_key
    assert (directory / "ca.crt").read_bytes() == first.ca_cert
    assert stat.S_IMODE((directory / "tls.key").stat().st_mode) == 0o600
    assert write_cert_dir(directory, first) is False
    assert write_cert_dir(directory, second) is True
    assert (directory / "tls.key").read_bytes() == second.tls_key
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
