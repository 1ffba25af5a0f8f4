"""Run Kubeflow Trainer's controller-manager (github.com/kubeflow/trainer/v2 v2.0.0) out of
cluster against one fleet member, with its validating webhooks served for real.

The `trainer-controller-manager` binary is built from Trainer's own module by `fleetq dev
tools trainer`; its CRDs and webhook manifest are read from the same module in the Go
module cache. Trainer v2.0 has no configuration file: it always runs the cert-controller
rotator, which insists on
- the Secret `kubeflow-trainer-webhook-cert` in `kubeflow-system` (Trainer's namespace
  outside a pod), whose CA must be valid for the name `kubeflow-trainer-ca` and whose
  serving certificate must be valid for `kubeflow-trainer-controller-manager.kubeflow-
  system.svc`; we seed it with a CA we issue and a serving certificate that also names
  127.0.0.1, so the rotator keeps them;
- the ValidatingWebhookConfiguration `validator.trainer.kubeflow.org`, into which it
  injects that CA before the controllers start; we create it from the module's manifest,
  each webhook pointed at `https://127.0.0.1:<port><path>`;
- the fixed certificate directory `/tmp/k8s-webhook-server/serving-certs`, which every
  Trainer (and other cert-controller operators) on the machine would share: the process
  runs in its own mount namespace (`unshare --mount`) with its work directory's
  certificate directory bound there.
`wait_ready` returns once /readyz answers (certificates in place, webhooks serving) and
Trainer's webhook has refused a dry-run TrainJob naming a missing runtime; `start`
installs the CRDs, `install_runtime` the fleet's ClusterTrainingRuntime.

Everything of one controller lives in its work directory (kubeconfig copy, certificates,
log, pid file), like the JobSet controller's, so `fleetq dev down` stops it too.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from devfleet.ports import allocate_ports
from devfleet.process_group import stop_group
from devfleet.process_readiness import wait_until_ready
from devfleet.sample_jobs import kwok_training_runtime
from devfleet.toolchain import TRAINER_VERSION, binary_path, tool
from devfleet.upstream_kueue import UpstreamKueueError, install_crd_files

TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
BINARY = "trainer-controller-manager"
CRD_DIR = Path("manifests/base/crds")
WEBHOOK_MANIFEST = Path("manifests/base/webhook/manifests.yaml")
NAMESPACE = "kubeflow-system"
"""Where Trainer looks for its Secret when it runs outside a pod."""
SERVICE = "kubeflow-trainer-controller-manager"
SECRET = "kubeflow-trainer-webhook-cert"
WEBHOOK_CONFIGURATION = "validator.trainer.kubeflow.org"
"""The name Trainer's rotator injects its CA into (fixed in its main)."""
CA_NAME = "kubeflow-trainer-ca"
FIXED_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""Trainer's hard-coded certificate directory (bound per process, see module docstring)."""
TRAINER_GROUP, TRAINER_API_VERSION = "trainer.kubeflow.org", "v1alpha1"
PID_FILE = "trainer-controller.pid"
LOG_FILE = "trainer-controller.log"
HOST = "127.0.0.1"

Json = dict[str, Any]


class TrainerControllerError(RuntimeError):
    """Trainer could not be prepared, started or checked; the message says why (with its
    log's tail when it ran)."""


@dataclass(frozen=True, slots=True)
class TrainerPorts:
    webhook: int
    health: int


# -- pure parts -----------------------------------------------------------------------


def webhook_dns_name() -> str:
    return f"{SERVICE}.{NAMESPACE}.svc"


def webhook_secret(data: Mapping[str, bytes]) -> Json:
    """The Secret the rotator reads (keys ca.crt, ca.key, tls.crt, tls.key)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
    }


def local_webhook_configuration(manifest: Json, *, port: int, ca_bundle: bytes) -> Json:
    """Trainer's ValidatingWebhookConfiguration under the name its rotator expects, each
    webhook's Service reference replaced by `https://127.0.0.1:<port><path>`."""
    configuration = copy.deepcopy(manifest)
    configuration["metadata"] = {
        "name": WEBHOOK_CONFIGURATION,
        "labels": {"app.kubernetes.io/managed-by": "fleetq-devfleet"},
    }
    encoded = base64.b64encode(ca_bundle).decode()
    for webhook in configuration.get("webhooks") or ():
        path = ((webhook.get("clientConfig") or {}).get("service") or {}).get("path")
        if not path:
            raise TrainerControllerError(f"webhook {webhook.get('name')} names no path")
        webhook["clientConfig"] = {"url": f"https://{HOST}:{port}{path}", "caBundle": encoded}
    return configuration


def upstream_webhook_manifest(path: Path) -> Json:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "ValidatingWebhookConfiguration":
            return doc
    raise TrainerControllerError(f"no ValidatingWebhookConfiguration in {path}")


def probe_trainjob(name: str) -> Json:
    """A TrainJob naming a runtime that does not exist: Trainer's webhook refuses it."""
    return {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_API_VERSION}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "fleetq-no-such-runtime"}},
    }


# -- the module and the binary --------------------------------------------------------


@functools.cache
def trainer_module_dir() -> Path:
    """github.com/kubeflow/trainer/v2 in the Go module cache (through the wrapper module)."""
    env = dict(os.environ, GOTOOLCHAIN=os.environ.get("GOTOOLCHAIN", "local"))
    try:
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{TRAINER_MODULE}@{TRAINER_VERSION}"],
            cwd=tool("trainer").module_dir,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TrainerControllerError(f"cannot run `go mod download`: {exc}") from exc
    if done.returncode != 0:
        raise TrainerControllerError(
            f"cannot locate the {TRAINER_MODULE} {TRAINER_VERSION} module: "
            f"{(done.stdout + done.stderr).strip()[-500:]}"
        )
    return Path(json.loads(done.stdout)["Dir"])


def controller_binary() -> Path:
    binary = binary_path(BINARY)
    if not binary.exists():
        raise TrainerControllerError(
            f"{binary} is missing: run `fleetq dev tools trainer` (or `make fleet-tools`)"
        )
    return binary


def install_trainer_crds(kubeconfig: Path, timeout: float = 120.0) -> list[str]:
    """Server-side apply Trainer's CRDs from the module; wait until they are Established."""
    try:
        return install_crd_files(kubeconfig, trainer_module_dir() / CRD_DIR, timeout)
    except UpstreamKueueError as exc:
        raise TrainerControllerError(f"installing Trainer's CRDs failed: {exc}") from exc


class TrainerController:
    """One `trainer-controller-manager` against one cluster; a context manager."""

    def __init__(
        self,
        kubeconfig: Path,
        workdir: Path | None = None,
        *,
        label: str = "trainer",
        install_crds: bool = True,
    ) -> None:
        self.source_kubeconfig = kubeconfig
        self.label = label
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="trainer-controller-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        """A copy inside the work directory: its path in the command line tells
        `stop_controllers_under` the process is ours."""
        self.log_path = self.workdir / LOG_FILE
        self.cert_dir = self.workdir / "certs"
        self.install_crds = install_crds
        webhook, health = allocate_ports(2)
        self.ports = TrainerPorts(webhook, health)
        self.started_at: float | None = None
        self.ready_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._registered = False

    @property
    def pid(self) -> int:
        if self._process is None:
            raise TrainerControllerError(f"Trainer on {self.label} is not started")
        return self._process.pid

    @property
    def ready_url(self) -> str:
        return f"http://{HOST}:{self.ports.health}/readyz"

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- start ------------------------------------------------------------------------
    def command(self) -> list[str]:
        binary = controller_binary()
        return [
            "unshare",
            "--mount",
            "sh",
            "-c",
            'mount --bind "$0" "$1" && shift 2 && exec "$@"',
            str(self.cert_dir),
            str(FIXED_CERT_DIR),
            str(binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--webhook-server-port={self.ports.webhook}",
            f"--health-probe-bind-address={HOST}:{self.ports.health}",
            "--metrics-bind-address=0",
            "--leader-elect=false",
            "--zap-log-level=info",
            "--zap-encoder=console",
        ]

    def _prepare_cluster(self) -> None:
        """Namespace, the seeded Secret and the webhook configuration (replacing ours)."""
        from kubernetes import client, config

        from core.manager.webhook_certs import issue

        bundle = issue(
            [webhook_dns_name(), HOST],
            dt.datetime.now(dt.UTC),
            "kubeflow-trainer",
            ca_dns_names=[CA_NAME],
        )
        manifest = upstream_webhook_manifest(trainer_module_dir() / WEBHOOK_MANIFEST)
        configuration = local_webhook_configuration(
            manifest, port=self.ports.webhook, ca_bundle=bundle.ca_cert
        )
        with config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client:
            core = client.CoreV1Api(api_client)
            with contextlib.suppress(client.ApiException):
                core.create_namespace({"metadata": {"name": NAMESPACE}})
            with contextlib.suppress(client.ApiException):
                core.delete_namespaced_secret(SECRET, NAMESPACE)
            core.create_namespaced_secret(NAMESPACE, webhook_secret(bundle.to_secret_data()))
            admission = client.AdmissionregistrationV1Api(api_client)
            with contextlib.suppress(client.ApiException):
                admission.delete_validating_webhook_configuration(WEBHOOK_CONFIGURATION)
            admission.create_validating_webhook_configuration(configuration)
        self._registered = True

    def start(self) -> TrainerController:
        """Install the CRDs, prepare the cluster and start the process (no waiting)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.source_kubeconfig, self.kubeconfig)
        argv = self.command()  # the binary check comes before any cluster work
        FIXED_CERT_DIR.mkdir(parents=True, exist_ok=True)  # the bind's mount point
        if self.install_crds:
            install_trainer_crds(self.kubeconfig)
        self._prepare_cluster()
        self.started_at = time.monotonic()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (self.workdir / PID_FILE).write_text(f"{self._process.pid}\n")
        return self

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds from the start until /readyz answered and the TrainJob webhook refused
        a TrainJob naming a missing runtime."""
        process = self._process
        if process is None or self.started_at is None:
            raise TrainerControllerError("start() first")
        began = time.monotonic()
        wait_until_ready(
            f"Trainer on {self.label}",
            self.ready_url,
            exit_code=process.poll,
            log_excerpt=lambda: f"log {self.log_path}:\n{self.log_tail()}",
            error=TrainerControllerError,
            timeout=timeout,
            interval=0.2,
        )
        self.check_webhook(timeout=max(5.0, timeout - (time.monotonic() - began)))
        self.ready_seconds = time.monotonic() - self.started_at
        return self.ready_seconds

    def check_webhook(self, timeout: float = 30.0, namespace: str = "default") -> str:
        """Dry-run create a TrainJob naming a missing runtime until Trainer's webhook
        refuses it (its message)."""
        from kubernetes import client, config

        probe = probe_trainjob(f"fleetq-webhook-probe-{os.getpid()}")
        deadline = time.monotonic() + timeout
        last = ""
        with config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client:
            api = client.CustomObjectsApi(api_client)
            while True:
                if self._process is not None and self._process.poll() is not None:
                    raise TrainerControllerError(
                        f"Trainer on {self.label} exited ({self._process.returncode}); "
                        f"log {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    api.create_namespaced_custom_object(
                        TRAINER_GROUP, TRAINER_API_VERSION, namespace, "trainjobs", probe,
                        dry_run="All",
                    )
                    last = "a TrainJob naming a missing runtime was accepted"
                except client.ApiException as exc:
                    body = str(exc.body)
                    if exc.status in (400, 403, 422) and "fleetq-no-such-runtime" in body:
                        return body
                    last = f"HTTP {exc.status}: {body[:300]}"
                if time.monotonic() >= deadline:
                    raise TrainerControllerError(
                        f"Trainer's TrainJob webhook on {self.label} did not answer in "
                        f"{timeout:.0f}s ({last}); log {self.log_path}:\n{self.log_tail()}"
                    )
                time.sleep(0.2)

    def install_runtime(self, runtime: Json | None = None) -> None:
        """Create (or replace) a ClusterTrainingRuntime; by default the fleet's kwok one."""
        from kubernetes import client, config

        body = runtime or kwok_training_runtime()
        name = body["metadata"]["name"]
        with config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client:
            api = client.CustomObjectsApi(api_client)
            args = (TRAINER_GROUP, TRAINER_API_VERSION, "clustertrainingruntimes")
            with contextlib.suppress(client.ApiException):
                api.delete_cluster_custom_object(*args, name)
            api.create_cluster_custom_object(*args, body)

    # -- stop -------------------------------------------------------------------------
    def unregister_webhooks(self) -> None:
        """Best effort: with failurePolicy Fail a stale configuration would block every
        TrainJob and runtime write on the cluster."""
        if not self._registered:
            return
        from kubernetes import client, config

        with (
            contextlib.suppress(Exception),
            config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client,
        ):
            client.AdmissionregistrationV1Api(api_client).delete_validating_webhook_configuration(
                WEBHOOK_CONFIGURATION, _request_timeout=5
            )
        self._registered = False

    def stop(self, grace: float = 10.0, *, unregister: bool = True) -> int | None:
        """Stop the controller; its exit code (None when it never ran). The log stays."""
        if unregister:
            self.unregister_webhooks()
        code: int | None = None
        if self._process is not None:
            code = stop_group(self._process, grace)
        (self.workdir / PID_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.cert_dir, ignore_errors=True)
        self.kubeconfig.unlink(missing_ok=True)
        return code

    def __enter__(self) -> TrainerController:
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.stop(grace=5.0)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
