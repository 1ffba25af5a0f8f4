"""Run the real JobSet controller (sigs.k8s.io/jobset v0.10.1) out of cluster against one
fleet member.

The `jobset-controller` binary is built from JobSet's own Go module by `fleetq dev tools
jobset`; its CRD and webhook manifests are read from the same module in the Go module
cache, so nothing of JobSet is copied into this repository. Out of cluster it needs what
its Deployment would have had:
- the JobSet CRD (server-side apply: it is too big for a client-side apply's annotation);
- a config.jobset.x-k8s.io Configuration: leader election off, internal certificate
  management off (it would want a Service and a Secret in its namespace), webhook, health
  and metrics servers on free loopback ports;
- a serving certificate with SAN 127.0.0.1 for the webhook and metrics servers (issued by
  core.manager.webhook_certs), and the Mutating/ValidatingWebhookConfigurations of its
  manifests pointing at `https://127.0.0.1:<port><path>` with that CA as `caBundle`.
The JobSet defaulting webhook matters (without it a JobSet lacks its success and startup
policies and its Jobs' Indexed completion mode), so `wait_ready` does not return before a
server-side dry-run create came back defaulted.

Everything of one controller lives in its work directory (config, certificates, log, pid
file). The fleet puts it under its state directory, so `fleetq dev down` stops it too.
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
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from devfleet.ports import allocate_ports
from devfleet.process_group import signal_group, stop_group
from devfleet.process_readiness import wait_until_ready
from devfleet.toolchain import JOBSET_VERSION, binary_path, tool
from devfleet.upstream_kueue import UpstreamKueueError, install_crd_files

JOBSET_MODULE = "sigs.k8s.io/jobset"
BINARY = "jobset-controller"
CONFIG_API_VERSION = "config.jobset.x-k8s.io/v1alpha1"
JOBSET_GROUP, JOBSET_API_VERSION = "jobset.x-k8s.io", "v1alpha2"
CRD_DIR = Path("config/components/crd/bases")
WEBHOOK_DIR = Path("config/components/webhook")
WEBHOOK_CONFIGURATION_PREFIX = "fleetq-jobset"
"""Our webhook configurations are `fleetq-jobset-mutating` / `fleetq-jobset-validating`:
one controller per cluster, removed when it stops."""
PID_FILE = "jobset-controller.pid"
LOG_FILE = "jobset-controller.log"
WEBHOOK_HOST = "127.0.0.1"

Json = dict[str, Any]


class JobSetControllerError(RuntimeError):
    """The JobSet controller could not be prepared, started or checked; the message says
    why (with its log's tail when it ran)."""


@dataclass(frozen=True, slots=True)
class JobSetPorts:
    webhook: int
    health: int
    metrics: int


# -- pure parts: the Configuration and the webhook configurations -------------------------


def controller_configuration(
    ports: JobSetPorts, cert_dir: Path, *, qps: float = 50.0, burst: int = 100
) -> Json:
    """The controller's Configuration (read with strict decoding: known fields only)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": WEBHOOK_HOST, "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"{WEBHOOK_HOST}:{ports.metrics}", "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"{WEBHOOK_HOST}:{ports.health}"},
        "clientConnection": {"qps": qps, "burst": burst},
    }


def _pointer_tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise JobSetControllerError(f"not a JSON pointer: {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def apply_json_patch(document: Json, operations: Iterable[Mapping[str, Any]]) -> Json:
    """A copy of `document` with RFC 6902 `replace`, `add` and `remove` operations applied
    (what kustomize's patches of JobSet's webhook manifests use)."""
    result = copy.deepcopy(document)
    for operation in operations:
        op, tokens = operation.get("op"), _pointer_tokens(str(operation.get("path", "")))
        parent: Any = result
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        value = copy.deepcopy(operation.get("value"))
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if op == "add":
                parent.insert(index, value)
            elif op == "replace":
                parent[index] = value
            elif op == "remove":
                del parent[index]
            else:
                raise JobSetControllerError(f"unsupported JSON patch operation {op!r}")
        elif op in ("add", "replace"):
            if op == "replace" and last not in parent:
                raise JobSetControllerError(f"replace of a missing member {operation['path']}")
            parent[last] = value
        elif op == "remove":
            del parent[last]
        else:
            raise JobSetControllerError(f"unsupported JSON patch operation {op!r}")
    return result


def upstream_webhook_manifests(webhook_dir: Path) -> list[Json]:
    """JobSet's Mutating/ValidatingWebhookConfigurations as its kustomization builds them:
    `manifests.yaml` with the kustomization's JSON patches applied."""
    manifests = [
        doc
        for doc in yaml.safe_load_all((webhook_dir / "manifests.yaml").read_text())
        if isinstance(doc, dict)
    ]
    kustomization = yaml.safe_load((webhook_dir / "kustomization.yaml").read_text()) or {}
    for patch in kustomization.get("patches") or ():
        target = patch.get("target") or {}
        operations = yaml.safe_load((webhook_dir / patch["path"]).read_text()) or []
        wanted = (target.get("kind"), target.get("name"))
        for index, doc in enumerate(manifests):
            if (doc.get("kind"), (doc.get("metadata") or {}).get("name")) == wanted:
                manifests[index] = apply_json_patch(doc, operations)
    return manifests


def webhook_configuration_name(kind: str, prefix: str = WEBHOOK_CONFIGURATION_PREFIX) -> str:
    """`<prefix>-mutating` or `<prefix>-validating`."""
    return f"{prefix}-{'mutating' if kind == 'MutatingWebhookConfiguration' else 'validating'}"


def local_webhook_configurations(
    manifests: Iterable[Json],
    *,
    port: int,
    ca_bundle: bytes,
    prefix: str = WEBHOOK_CONFIGURATION_PREFIX,
) -> list[Json]:
    """Upstream's webhook configurations renamed to ours and pointed at the out-of-cluster
    webhook server: each webhook's Service reference becomes `https://127.0.0.1:<port>`
    plus its path, with the serving certificate's CA as `caBundle`."""
    encoded = base64.b64encode(ca_bundle).decode()
    result = []
    for manifest in manifests:
        kind = manifest.get("kind")
        if kind not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        configuration = copy.deepcopy(manifest)
        configuration["metadata"] = {
            "name": webhook_configuration_name(kind, prefix),
            "labels": {"app.kubernetes.io/managed-by": "fleetq-devfleet"},
        }
        for webhook in configuration.get("webhooks") or ():
            service = (webhook.get("clientConfig") or {}).get("service") or {}
            path = service.get("path")
            if not path:
                raise JobSetControllerError(f"webhook {webhook.get('name')} names no path")
            webhook["clientConfig"] = {
                "url": f"https://{WEBHOOK_HOST}:{port}{path}",
                "caBundle": encoded,
            }
        result.append(configuration)
    if len(result) != 2:
        raise JobSetControllerError(
            f"expected one mutating and one validating configuration, found {len(result)}"
        )
    return result


def probe_jobset(name: str) -> Json:
    """The smallest JobSet the validating webhook accepts: a dry-run create of it shows
    whether the defaulting webhook ran (nothing is stored)."""
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_API_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "probe",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {"containers": [{"name": "probe", "image": "probe"}]}
                            }
                        }
                    },
                }
            ]
        },
    }


def defaulted_by_webhook(jobset: Mapping[str, Any]) -> bool:
    """Fields only JobSet's defaulting webhook sets (the CRD schema defaults none of them)."""
    spec = jobset.get("spec") or {}
    jobs = spec.get("replicatedJobs") or []
    return (
        (spec.get("successPolicy") or {}).get("operator") == "All"
        and (spec.get("network") or {}).get("enableDNSHostnames") is True
        and bool(jobs)
        and all(
            ((job.get("template") or {}).get("spec") or {}).get("completionMode") == "Indexed"
            for job in jobs
        )
    )


# -- the module and the binary ---------------------------------------------------------


@functools.cache
def jobset_module_dir() -> Path:
    """sigs.k8s.io/jobset in the Go module cache (downloaded through the wrapper module)."""
    env = dict(os.environ, GOTOOLCHAIN=os.environ.get("GOTOOLCHAIN", "local"))
    try:
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{JOBSET_MODULE}@{JOBSET_VERSION}"],
            cwd=tool("jobset").module_dir,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JobSetControllerError(f"cannot run `go mod download`: {exc}") from exc
    if done.returncode != 0:
        raise JobSetControllerError(
            f"cannot locate the {JOBSET_MODULE} {JOBSET_VERSION} module: "
            f"{(done.stdout + done.stderr).strip()[-500:]}"
        )
    return Path(json.loads(done.stdout)["Dir"])


def controller_binary() -> Path:
    binary = binary_path(BINARY)
    if not binary.exists():
        raise JobSetControllerError(
            f"{binary} is missing: run `fleetq dev tools jobset` (or `make fleet-tools`)"
        )
    return binary


def install_jobset_crds(kubeconfig: Path, timeout: float = 120.0) -> list[str]:
    """Server-side apply JobSet's CRD from the module; wait until it is Established."""
    try:
        return install_crd_files(kubeconfig, jobset_module_dir() / CRD_DIR, timeout)
    except UpstreamKueueError as exc:
        raise JobSetControllerError(f"installing the JobSet CRD failed: {exc}") from exc


def _rss_bytes(pid: int) -> int:
    """Resident memory of one process (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


class JobSetController:
    """One `jobset-controller` process against one cluster; a context manager.

    `start()` installs the CRD, writes the config and the certificates into `workdir` and
    starts the binary in its own process group (output to the log, pid in a pid file);
    `wait_ready()` waits for /readyz, registers the webhook configurations and checks that
    the defaulting webhook answers; `stop()` removes the webhook configurations, SIGTERMs
    the process group (SIGKILL after a grace period) and leaves only the log behind.
    """

    def __init__(
        self,
        kubeconfig: Path,
        workdir: Path | None = None,
        *,
        label: str = "jobset",
        install_crds: bool = True,
        qps: float = 50.0,
        burst: int = 100,
        webhook_prefix: str = WEBHOOK_CONFIGURATION_PREFIX,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.label = label
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="jobset-controller-"))
        self.log_path = self.workdir / LOG_FILE
        self.cert_dir = self.workdir / "certs"
        self.install_crds = install_crds
        self.qps, self.burst = qps, burst
        self.webhook_prefix = webhook_prefix
        webhook, health, metrics = allocate_ports(3)
        self.ports = JobSetPorts(webhook, health, metrics)
        self.started_at: float | None = None
        self.ready_seconds: float | None = None
        self._ca_bundle: bytes | None = None
        self._webhooks_registered = False
        self._process: subprocess.Popen[bytes] | None = None

    # -- state ----------------------------------------------------------------------
    @property
    def pid(self) -> int:
        if self._process is None:
            raise JobSetControllerError(f"the JobSet controller on {self.label} is not started")
        return self._process.pid

    @property
    def ready_url(self) -> str:
        return f"http://{WEBHOOK_HOST}:{self.ports.health}/readyz"

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def rss_bytes(self) -> int:
        return _rss_bytes(self.pid) if self.running() else 0

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- start ----------------------------------------------------------------------
    def command(self) -> list[str]:
        """Write the config and the serving certificate; the argv that starts the binary."""
        from core.manager.webhook_certs import issue

        binary = controller_binary()
        bundle = issue([WEBHOOK_HOST, "localhost"], dt.datetime.now(dt.UTC), "jobset-webhook")
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        (self.cert_dir / "tls.crt").write_bytes(bundle.tls_cert)
        key = self.cert_dir / "tls.key"
        key.write_bytes(bundle.tls_key)
        key.chmod(0o600)
        self._ca_bundle = bundle.ca_cert
        config = self.workdir / "config.yaml"
        document = controller_configuration(
            self.ports, self.cert_dir, qps=self.qps, burst=self.burst
        )
        config.write_text(yaml.safe_dump(document, sort_keys=False))
        return [
            str(binary),
            f"--config={config}",
            f"--kubeconfig={self.kubeconfig}",
            "--zap-log-level=info",
            "--zap-encoder=console",
            "--zap-stacktrace-level=panic",
        ]

    def start(self) -> JobSetController:
        """Install the CRD and start the process (do not wait: see `wait_ready`)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = self.command()  # the binary check comes before any cluster work
        if self.install_crds:
            install_jobset_crds(self.kubeconfig)
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
        """Seconds from the process start until /readyz answered, the webhook configurations
        were registered and a dry-run JobSet came back defaulted; JobSetControllerError if
        the process exits or `timeout` passes."""
        process = self._process
        if process is None or self.started_at is None:
            raise JobSetControllerError("start() first")
        began = time.monotonic()
        wait_until_ready(
            f"the JobSet controller on {self.label}",
            self.ready_url,
            exit_code=process.poll,
            log_excerpt=lambda: f"log {self.log_path}:\n{self.log_tail()}",
            error=JobSetControllerError,
            timeout=timeout,
            interval=0.1,
        )
        self.register_webhooks()
        self.check_defaulting(timeout=max(5.0, timeout - (time.monotonic() - began)))
        self.ready_seconds = time.monotonic() - self.started_at
        return self.ready_seconds

    def webhook_configurations(self) -> list[Json]:
        if self._ca_bundle is None:
            raise JobSetControllerError("no serving certificate yet: start() first")
        manifests = upstream_webhook_manifests(jobset_module_dir() / WEBHOOK_DIR)
        return local_webhook_configurations(
            manifests,
            port=self.ports.webhook,
            ca_bundle=self._ca_bundle,
            prefix=self.webhook_prefix,
        )

    def register_webhooks(self) -> None:
        """Create (or replace) our Mutating/ValidatingWebhookConfigurations."""
        from kubernetes import client, config

        configurations = self.webhook_configurations()
        with config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client:
            api = client.AdmissionregistrationV1Api(api_client)
            for configuration in configurations:
                mutating = configuration["kind"] == "MutatingWebhookConfiguration"
                create = (
                    api.create_mutating_webhook_configuration
                    if mutating
                    else api.create_validating_webhook_configuration
                )
                delete = (
                    api.delete_mutating_webhook_configuration
                    if mutating
                    else api.delete_validating_webhook_configuration
                )
                try:
                    create(configuration)
                except client.ApiException as exc:
                    if exc.status != 409:
                        raise JobSetControllerError(
                            f"registering {configuration['metadata']['name']} failed: {exc}"
                        ) from exc
                    # Left by a controller that was killed: ours to replace.
                    delete(configuration["metadata"]["name"])
                    create(configuration)
        self._webhooks_registered = True

    def check_defaulting(self, timeout: float = 30.0, namespace: str = "default") -> Json:
        """Dry-run create a JobSet until it comes back defaulted by the webhook (the
        apiserver picks up new webhook configurations within a moment)."""
        from kubernetes import client, config

        probe = probe_jobset(f"fleetq-webhook-probe-{os.getpid()}")
        deadline = time.monotonic() + timeout
        last: str = ""
        with config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client:
            api = client.CustomObjectsApi(api_client)
            while True:
                if self._process is not None and self._process.poll() is not None:
                    raise JobSetControllerError(
                        f"the JobSet controller on {self.label} exited "
                        f"({self._process.returncode}); log {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    answer: Json = api.create_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_API_VERSION,
                        namespace,
                        "jobsets",
                        probe,
                        dry_run="All",
                    )
                    if defaulted_by_webhook(answer):
                        return answer
                    last = f"not defaulted: {json.dumps(answer.get('spec'))[:300]}"
                except client.ApiException as exc:
                    last = f"HTTP {exc.status}: {str(exc.body)[:300]}"
                if time.monotonic() >= deadline:
                    raise JobSetControllerError(
                        f"JobSet's defaulting webhook on {self.label} did not answer in "
                        f"{timeout:.0f}s ({last}); log {self.log_path}:\n{self.log_tail()}"
                    )
                time.sleep(0.2)

    # -- stop -----------------------------------------------------------------------
    def unregister_webhooks(self) -> None:
        """Best effort: with failurePolicy Fail, a stale configuration would block every
        JobSet (and JobSet pod) create on the cluster."""
        if not self._webhooks_registered:
            return
        from kubernetes import client, config

        with (
            contextlib.suppress(Exception),
            config.new_client_from_config(config_file=str(self.kubeconfig)) as api_client,
        ):
            api = client.AdmissionregistrationV1Api(api_client)
            for delete, kind in (
                (api.delete_mutating_webhook_configuration, "MutatingWebhookConfiguration"),
                (api.delete_validating_webhook_configuration, "ValidatingWebhookConfiguration"),
            ):
                name = webhook_configuration_name(kind, self.webhook_prefix)
                with contextlib.suppress(client.ApiException):
                    delete(name, _request_timeout=5)
        self._webhooks_registered = False

    def stop(self, grace: float = 10.0, *, unregister: bool = True) -> int | None:
        """Stop the controller; its exit code (None when it never ran). The log stays."""
        if unregister:
            self.unregister_webhooks()
        code: int | None = None
        process = self._process
        if process is not None:
            code = stop_group(process, grace)
        (self.workdir / PID_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.cert_dir, ignore_errors=True)
        (self.workdir / "config.yaml").unlink(missing_ok=True)
        return code

    def __enter__(self) -> JobSetController:
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


def stop_controllers_under(directory: Path, grace: float = 10.0) -> list[int]:
    """Stop every controller whose pid file is under `directory` (from another process,
    e.g. `fleetq dev down`): SIGTERM its process group, SIGKILL after `grace`. Only a
    process whose command line still names its work directory is signalled (pids are
    reused). The pids that were stopped."""
    stopped: list[int] = []
    for pid_file in sorted(directory.glob(f"*/{PID_FILE}")):
        try:
            pid = int(pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError):
            pid_file.unlink(missing_ok=True)
            continue
        if str(pid_file.parent) in cmdline:
            signal_group(pid, signal.SIGTERM)
            stopped.append(pid)
    for pid in stopped:
        if not _wait_gone(pid, grace):
            signal_group(pid, signal.SIGKILL)
            _wait_gone(pid, 5.0)
    for pid_file in directory.glob(f"*/{PID_FILE}"):
        pid_file.unlink(missing_ok=True)
    return stopped
