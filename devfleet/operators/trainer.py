"""Kubeflow Trainer's controller-manager (github.com/kubeflow/trainer/v2) as the fleet runs it.

Trainer v2.0 has no configuration file and always runs the cert-controller rotator, which
will not let its controllers start before it has
- read the Secret `kubeflow-trainer-webhook-cert` in `kubeflow-system` (its namespace
  outside a pod) and found there a CA valid for the name `kubeflow-trainer-ca` (with an
  RSA key in PKCS#1 form) and a serving certificate valid for
  `kubeflow-trainer-controller-manager.kubeflow-system.svc` (else it makes its own,
  valid for that name only);
- injected that CA into the ValidatingWebhookConfiguration `validator.trainer.kubeflow.org`;
- found the certificates in `/tmp/k8s-webhook-server/serving-certs` (where its Deployment
  mounts the Secret), a directory it hard-codes as every cert-controller operator does.
So `prepare` seeds the Secret with a CA we issue (named as the rotator wants) and a
serving certificate that also names 127.0.0.1, writes them where the mount would be (a
directory private to the process: `private_dirs`), and creates that configuration from
the module's manifest with each webhook pointed at `https://127.0.0.1:<port><path>`.
Trainer's webhooks (TrainJob, TrainingRuntime, ClusterTrainingRuntime validation) then
really answer: readiness waits
for one to refuse a dry-run TrainJob naming a missing runtime, and then installs the
fleet's kwok ClusterTrainingRuntime (`sample_jobs.kwok_training_runtime`), so TrainJobs
can run on every cluster (the manager too: the hub builds a TrainJob's pod sets from it).
Trainer creates JobSets: JobSet's controller runs beside it (`requires`).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import ipaddress
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator, OperatorError
from devfleet.operators.webhook_manifests import kustomized_webhook_manifests
from devfleet.sample_jobs import kwok_training_runtime
from devfleet.toolchain import TRAINER_VERSION

if TYPE_CHECKING:
    from devfleet.operators.process import OperatorProcess

NAMESPACE = "kubeflow-system"
SERVICE = "kubeflow-trainer-controller-manager"
SECRET = "kubeflow-trainer-webhook-cert"
WEBHOOK_CONFIGURATION = "validator.trainer.kubeflow.org"
CA_NAME = "kubeflow-trainer-ca"
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
WEBHOOK_DIR = "manifests/base/webhook"
TRAINER_GROUP, TRAINER_API_VERSION = "trainer.kubeflow.org", "v1alpha1"
PROBE_RUNTIME = "fleetq-no-such-runtime"

Json = dict[str, Any]


def webhook_dns_name() -> str:
    return f"{SERVICE}.{NAMESPACE}.svc"


def webhook_secret(data: Mapping[str, bytes]) -> Json:
    """The Secret the rotator reads (ca.crt, ca.key, tls.crt, tls.key)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def local_webhook_configuration(manifests: list[Json], *, port: int, ca_bundle: bytes) -> Json:
    """Trainer's ValidatingWebhookConfiguration under the name its rotator injects into,
    each webhook's Service reference replaced by `https://127.0.0.1:<port><path>`."""
    found = [m for m in manifests if m.get("kind") == "ValidatingWebhookConfiguration"]
    if len(found) != 1:
        raise OperatorError(f"expected one ValidatingWebhookConfiguration, found {len(found)}")
    configuration = copy.deepcopy(found[0])
    configuration["metadata"] = {
        "name": WEBHOOK_CONFIGURATION,
        "labels": {"app.kubernetes.io/managed-by": "fleetq-devfleet"},
    }
    encoded = base64.b64encode(ca_bundle).decode()
    for webhook in configuration.get("webhooks") or ():
        path = ((webhook.get("clientConfig") or {}).get("service") or {}).get("path")
        if not path:
            raise OperatorError(f"webhook {webhook.get('name')} names no path")
        webhook["clientConfig"] = {
            "url": f"https://{WEBHOOK_HOST}:{port}{path}",
            "caBundle": encoded,
        }
    return configuration


def probe_trainjob(name: str) -> Json:
    """A TrainJob naming a runtime that does not exist: Trainer's webhook refuses it."""
    return {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_API_VERSION}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": PROBE_RUNTIME}},
    }


def rotator_certificates(now: dt.datetime) -> dict[str, bytes]:
    """A CA valid for `kubeflow-trainer-ca` and a serving certificate it signed for Trainer's
    Service name and 127.0.0.1, as the rotator's Secret keys. RSA keys in PKCS#1 form:
    the rotator parses the CA key no other way."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def key() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def pem(private: rsa.RSAPrivateKey) -> bytes:
        return private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )

    begin, end = now - dt.timedelta(hours=1), now + dt.timedelta(days=3650)
    ca_key, tls_key = key(), key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(CA_NAME)]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    serving = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, webhook_dns_name())]))
        .issuer_name(ca_name)
        .public_key(tls_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName(webhook_dns_name()),
                    x509.IPAddress(ipaddress.ip_address(WEBHOOK_HOST)),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    encoding = serialization.Encoding.PEM
    return {
        "ca.crt": ca.public_bytes(encoding),
        "ca.key": pem(ca_key),
        "tls.crt": serving.public_bytes(encoding),
        "tls.key": pem(tls_key),
    }


def command(launch: Launch) -> list[str]:
    return [
        f"--kubeconfig={launch.kubeconfig}",
        f"--webhook-server-port={launch.ports['webhook']}",
        f"--health-probe-bind-address={launch.address('health')}",
        "--metrics-bind-address=0",
        "--leader-elect=false",
        "--zap-log-level=info",
        "--zap-encoder=console",
    ]


def prepare(process: OperatorProcess, launch: Launch) -> None:
    """The namespace, the seeded Secret and the webhook configuration (replacing ours)."""
    from kubernetes import client, config

    certificates = rotator_certificates(dt.datetime.now(dt.UTC))
    manifests = kustomized_webhook_manifests(launch.module_dir / WEBHOOK_DIR)
    configuration = local_webhook_configuration(
        manifests, port=launch.ports["webhook"], ca_bundle=certificates["ca.crt"]
    )
    with config.new_client_from_config(config_file=str(launch.kubeconfig)) as api_client:
        core = client.CoreV1Api(api_client)
        with contextlib.suppress(client.ApiException):
            core.create_namespace({"metadata": {"name": NAMESPACE}})
        with contextlib.suppress(client.ApiException):
            core.delete_namespaced_secret(SECRET, NAMESPACE)
        core.create_namespaced_secret(NAMESPACE, webhook_secret(certificates))
        admission = client.AdmissionregistrationV1Api(api_client)
        with contextlib.suppress(client.ApiException):
            admission.delete_validating_webhook_configuration(WEBHOOK_CONFIGURATION)
        admission.create_validating_webhook_configuration(configuration)
    # In a pod the Secret is mounted at the certificate directory; the rotator only checks.
    mounted = process.private_dir(CERT_DIR)
    for name, content in certificates.items():
        (mounted / name).write_bytes(content)
        if name.endswith(".key"):
            (mounted / name).chmod(0o600)


def cleanup(process: OperatorProcess) -> None:
    """Remove the webhook configuration: with failurePolicy Fail it would block every
    TrainJob and runtime write once Trainer is gone."""
    from kubernetes import client, config

    with config.new_client_from_config(config_file=str(process.kubeconfig)) as api_client:
        client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(
            WEBHOOK_CONFIGURATION, _request_timeout=5
        )


def install_runtime(process: OperatorProcess, runtime: Json) -> None:
    """Create (or replace) a ClusterTrainingRuntime (Trainer's webhook validates it)."""
    from kubernetes import client, config

    plural = (TRAINER_GROUP, TRAINER_API_VERSION, "clustertrainingruntimes")
    with config.new_client_from_config(config_file=str(process.kubeconfig)) as api_client:
        api = client.CustomObjectsApi(api_client)
        with contextlib.suppress(client.ApiException):
            api.delete_cluster_custom_object(*plural, runtime["metadata"]["name"])
        api.create_cluster_custom_object(*plural, runtime)


def check_webhook_and_install_runtime(process: OperatorProcess, timeout: float) -> None:
    """Dry-run create a TrainJob naming a missing runtime until Trainer's webhook refuses
    it (the apiserver picks up the configuration within a moment), then install the
    fleet's ClusterTrainingRuntime."""
    from kubernetes import client, config

    probe = probe_trainjob(f"fleetq-webhook-probe-{os.getpid()}")
    deadline = time.monotonic() + timeout
    last = ""
    with config.new_client_from_config(config_file=str(process.kubeconfig)) as api_client:
        api = client.CustomObjectsApi(api_client)
        while True:
            process.fail_if_exited()
            try:
                api.create_namespaced_custom_object(
                    TRAINER_GROUP, TRAINER_API_VERSION, "default", "trainjobs", probe, dry_run="All"
                )
                last = "a TrainJob naming a missing runtime was accepted"
            except client.ApiException as exc:
                body = str(exc.body)
                if PROBE_RUNTIME in body and "denied the request" in body:
                    break
                last = f"HTTP {exc.status}: {body[:300]}"
            if time.monotonic() >= deadline:
                raise OperatorError(
                    f"Trainer's TrainJob webhook on {process.label} did not answer in "
                    f"{timeout:.0f}s ({last}); log {process.log_path}:\n{process.log_tail()}"
                )
            time.sleep(0.2)
    install_runtime(process, kwok_training_runtime())


TRAINER = Operator(
    name="trainer",
    title="Kubeflow Trainer",
    tool="trainer",
    binary="trainer-controller-manager",
    module="github.com/kubeflow/trainer/v2",
    version=TRAINER_VERSION,
    command=command,
    crd_dirs=("manifests/base/crds",),
    webhook_dir=None,  # registered by `prepare` under Trainer's fixed name, not ours
    port_names=("webhook", "health"),
    check_ready=check_webhook_and_install_runtime,
    prepare=prepare,
    cleanup=cleanup,
    private_dirs=(CERT_DIR,),
    requires=("jobset",),
)
