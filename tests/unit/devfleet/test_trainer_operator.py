"""Kubeflow Trainer on the operator launcher: the certificates its cert-controller rotator
keeps, its webhook configuration under the fixed name pointed at loopback, its command
line, and the launcher's private directories (a mount namespace per process)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store

from devfleet.operators import catalog
from devfleet.operators.process import OperatorProcess, operator_module_dir
from devfleet.operators.spec import Launch, Operator
from devfleet.operators.trainer import (
    CA_NAME,
    CERT_DIR,
    TRAINER,
    WEBHOOK_CONFIGURATION,
    WEBHOOK_DIR,
    command,
    local_webhook_configuration,
    rotator_certificates,
    webhook_dns_name,
)
from devfleet.operators.webhook_manifests import kustomized_webhook_manifests


def _launch() -> Launch:
    return Launch(
        kubeconfig=Path("/w/kubeconfig"),
        workdir=Path("/w"),
        cert_dir=Path("/w/certs"),
        ports={"webhook": 21001, "health": 21002},
        module_dir=Path("/m"),
        qps=50,
        burst=100,
    )


def test_trainer_is_in_the_catalog_after_the_jobset_controller_it_needs() -> None:
    assert catalog.OPERATORS["trainer"] is TRAINER
    assert [o.name for o in catalog.resolve(["trainer"])] == ["jobset", "trainer"]
    assert TRAINER.private_dirs == (CERT_DIR,) and TRAINER.webhook_dir is None


def test_the_command_serves_on_the_launchers_ports_without_leader_election() -> None:
    argv = command(_launch())
    assert "--webhook-server-port=21001" in argv
    assert "--health-probe-bind-address=127.0.0.1:21002" in argv
    assert "--leader-elect=false" in argv and "--metrics-bind-address=0" in argv
    assert "--kubeconfig=/w/kubeconfig" in argv


def test_the_certificates_are_ones_the_rotator_keeps_and_the_apiserver_trusts() -> None:
    now = dt.datetime.now(dt.UTC)
    data = rotator_certificates(now)
    # The rotator parses the CA key as PKCS#1 RSA only.
    assert data["ca.key"].startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    ca = x509.load_pem_x509_certificate(data["ca.crt"])
    ca_names = ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ca_names.get_values_for_type(x509.DNSName) == [CA_NAME]
    serving = x509.load_pem_x509_certificate(data["tls.crt"])
    # Valid beyond the rotator's 90-day look-ahead, for the Service name and for loopback.
    assert serving.not_valid_after_utc > now + dt.timedelta(days=91)
    store = Store([ca])
    for subject in (
        x509.DNSName(webhook_dns_name()),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ):
        verifier = PolicyBuilder().store(store).time(now).build_server_verifier(subject)
        verifier.verify(serving, [])


def test_trainers_webhooks_keep_its_name_and_point_at_loopback() -> None:
    module = operator_module_dir(TRAINER)
    manifests = kustomized_webhook_manifests(module / WEBHOOK_DIR)
    configuration = local_webhook_configuration(manifests, port=21001, ca_bundle=b"CA")
    assert configuration["metadata"]["name"] == WEBHOOK_CONFIGURATION
    urls = sorted(w["clientConfig"]["url"] for w in configuration["webhooks"])
    assert urls == [
        "https://127.0.0.1:21001/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
        "https://127.0.0.1:21001/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
        "https://127.0.0.1:21001/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    ]
    assert all(w["clientConfig"]["caBundle"] == "Q0E=" for w in configuration["webhooks"])


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_a_private_dir_is_bound_for_the_process_only(tmp_path: Path) -> None:
    target = tmp_path / "fixed"
    operator = Operator(
        name="probe",
        title="probe",
        tool="jobset",
        binary="jobset-controller",
        module="m",
        version="v0",
        command=lambda launch: [],
        private_dirs=(str(target),),
    )
    process = OperatorProcess(operator, tmp_path / "kubeconfig", tmp_path / "work")
    argv = process._with_private_dirs(["sh", "-c", f"echo inside > {target}/file"])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 and "Operation not permitted" in done.stderr:
        pytest.skip("no permission for a mount namespace here")
    assert done.returncode == 0, done.stderr
    assert (process.private_dir(str(target)) / "file").read_text() == "inside\n"
    assert not (target / "file").exists(), "the machine's directory is untouched"
