"""One operator process against one cluster, out of cluster: the launcher for every
operator in `catalog.OPERATORS`.

Out of cluster an operator needs what its Deployment would have had, and this provides it:
- its CRDs, server-side applied from its Go module (too big for a client-side apply);
- free loopback ports (`Operator.port_names`) and a serving certificate with SAN
  127.0.0.1 for its webhook and metrics servers (issued by core.manager.webhook_certs);
- its own Mutating/ValidatingWebhookConfigurations pointed at `https://127.0.0.1:<port>`
  with our CA (`webhook_manifests`), registered once its health URL answers and removed
  on stop (with failurePolicy Fail a stale one would block every create of its kinds);
- a process group of its own (output to its log, pid in a pid file), so `fleetq dev down`
  in another process can stop it too (`stop_operators_under`);
- whatever an operator insists on finding at start (`Operator.prepare`, undone by
  `Operator.cleanup`), and a private copy of directories it hard-codes
  (`Operator.private_dirs`, bound in a mount namespace of its own).
Everything of one run lives in its work directory; only the log is left after a stop.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from devfleet.operators.go_module import GoModuleError, module_dir
from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator, OperatorError
from devfleet.operators.webhook_manifests import (
    kustomized_webhook_manifests,
    local_webhook_configurations,
    webhook_configuration_name,
)
from devfleet.ports import allocate_ports
from devfleet.private_mounts import PrivateMountError, private_mounts
from devfleet.process_group import signal_group, stop_group, wait_gone
from devfleet.process_readiness import wait_until_ready
from devfleet.toolchain import binary_path, tool
from devfleet.upstream_kueue import UpstreamKueueError, install_crd_paths

PID_FILE = "operator.pid"
PRIVATE_DIR = "private"
"""Under the work directory: one directory per `Operator.private_dirs` entry."""
LOG_FILE = "operator.log"
CONFIG_FILES = ("config.yaml",)

Json = dict[str, Any]


def operator_module_dir(operator: Operator) -> Path:
    """The operator's Go module in the module cache (located through its wrapper module)."""
    try:
        return module_dir(operator.module, operator.version, tool(operator.tool).module_dir)
    except GoModuleError as exc:
        raise OperatorError(f"{operator.title}: {exc}") from exc


def operator_binary(operator: Operator) -> Path:
    binary = binary_path(operator.binary)
    if not binary.exists():
        raise OperatorError(
            f"{binary} is missing: run `fleetq dev tools {operator.tool}` (or `make fleet-tools`)"
        )
    return binary


def crd_files(directory: Path) -> list[Path]:
    """The CustomResourceDefinition manifests of a directory (kustomization files and
    other manifests beside them are skipped)."""
    return [
        path
        for path in sorted(directory.glob("*.yaml"))
        if "kind: CustomResourceDefinition" in path.read_text(errors="replace")
    ]


def install_operator_crds(
    operator: Operator, kubeconfig: Path, timeout: float = 120.0
) -> list[str]:
    """Server-side apply the operator's CRDs from its module; wait until Established."""
    if not operator.crd_dirs:
        return []
    root = operator_module_dir(operator)
    files = [
        path
        for relative in operator.crd_dirs
        for path in crd_files(root / relative)
        if path.name not in operator.crd_skip
    ]
    if not files:
        raise OperatorError(f"{operator.title}: no CRDs under {', '.join(operator.crd_dirs)}")
    try:
        return install_crd_paths(kubeconfig, files, timeout)
    except UpstreamKueueError as exc:
        raise OperatorError(f"installing the CRDs of {operator.title} failed: {exc}") from exc


def rss_bytes(pid: int) -> int:
    """Resident memory of one process (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class OperatorProcess:
    """One operator process against one cluster; a context manager.

    `start()` installs the CRDs, issues the certificate, lets the operator write its config
    and starts the binary (does not wait); `wait_ready()` waits for its health URL,
    registers its webhook configurations and runs its own readiness check; `stop()`
    removes the webhook configurations and stops the process group.
    """

    def __init__(
        self,
        operator: Operator,
        kubeconfig: Path,
        workdir: Path | None = None,
        *,
        label: str | None = None,
        install_crds: bool = True,
        qps: float = 50.0,
        burst: int = 100,
    ) -> None:
        self.operator = operator
        self.kubeconfig = kubeconfig
        self.label = label or operator.name
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{operator.name}-"))
        self.log_path = self.workdir / LOG_FILE
        self.cert_dir = self.workdir / "certs"
        self.install_crds = install_crds
        self.qps, self.burst = qps, burst
        self.ports = dict(
            zip(operator.port_names, allocate_ports(len(operator.port_names)), strict=True)
        )
        self.started_at: float | None = None
        self.ready_seconds: float | None = None
        self._ca_bundle: bytes | None = None
        self._webhooks_registered = False
        self._prepared = False
        self._launch: Launch | None = None
        self._process: subprocess.Popen[bytes] | None = None

    # -- state ----------------------------------------------------------------------
    @property
    def pid(self) -> int:
        if self._process is None:
            raise OperatorError(f"{self.operator.title} on {self.label} is not started")
        return self._process.pid

    @property
    def ready_url(self) -> str:
        port = self.ports[self.operator.ready_port]
        return f"http://{WEBHOOK_HOST}:{port}{self.operator.ready_path}"

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid) if self.running() else 0

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def fail_if_exited(self) -> None:
        """Raise (with the log's tail) when the process has exited."""
        if self._process is not None and self._process.poll() is not None:
            raise OperatorError(
                f"{self.operator.title} on {self.label} exited ({self._process.returncode}); "
                f"log {self.log_path}:\n{self.log_tail()}"
            )

    # -- start ----------------------------------------------------------------------
    def command(self) -> list[str]:
        """Issue the serving certificate; the operator's argv (it writes its config)."""
        from core.manager.webhook_certs import issue

        binary = operator_binary(self.operator)
        bundle = issue(
            [WEBHOOK_HOST, "localhost"], dt.datetime.now(dt.UTC), f"{self.operator.name}-webhook"
        )
        self.cert_dir.mkdir(parents=True, exist_ok=True)
        (self.cert_dir / "tls.crt").write_bytes(bundle.tls_cert)
        key = self.cert_dir / "tls.key"
        key.write_bytes(bundle.tls_key)
        key.chmod(0o600)
        self._ca_bundle = bundle.ca_cert
        launch = Launch(
            kubeconfig=self.kubeconfig,
            workdir=self.workdir,
            cert_dir=self.cert_dir,
            ports=dict(self.ports),
            module_dir=operator_module_dir(self.operator),
            qps=self.qps,
            burst=self.burst,
        )
        self._launch = launch
        under = self.operator.run_under(launch) if self.operator.run_under is not None else []
        return self._with_private_dirs([*under, str(binary), *self.operator.command(launch)])

    def private_dir(self, target: str) -> Path:
        """The work-directory copy bound over `target` (one of `Operator.private_dirs`)."""
        index = self.operator.private_dirs.index(target)
        return self.workdir / PRIVATE_DIR / str(index)

    def _with_private_dirs(self, argv: list[str]) -> list[str]:
        """`argv` run in a mount namespace of its own with a work-directory copy bound
        over each of `Operator.private_dirs` (unchanged when there are none)."""
        if not self.operator.private_dirs:
            return argv
        binds = []
        for target in self.operator.private_dirs:
            source = self.private_dir(target)
            source.mkdir(parents=True, exist_ok=True)
            binds.append((source, target))
        try:
            return [*private_mounts(binds), *argv]
        except PrivateMountError as exc:
            raise OperatorError(f"{self.operator.title}: {exc}") from exc

    def start(self) -> OperatorProcess:
        """Install the CRDs and start the process (do not wait: see `wait_ready`)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = self.command()  # the binary check comes before any cluster work
        if self.install_crds:
            install_operator_crds(self.operator, self.kubeconfig)
        if self.operator.prepare is not None and self._launch is not None:
            self._prepared = True  # cleaned up on stop even when prepare fails half-way
            self.operator.prepare(self, self._launch)
        self.started_at = time.monotonic()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.workdir,
                start_new_session=True,
            )
        (self.workdir / PID_FILE).write_text(f"{self._process.pid}\n")
        return self

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds from the process start until its health URL answered, its webhooks were
        registered and its own check passed; OperatorError if it exits or `timeout` passes."""
        process = self._process
        if process is None or self.started_at is None:
            raise OperatorError("start() first")
        began = time.monotonic()
        wait_until_ready(
            f"{self.operator.title} on {self.label}",
            self.ready_url,
            exit_code=process.poll,
            log_excerpt=lambda: f"log {self.log_path}:\n{self.log_tail()}",
            error=OperatorError,
            timeout=timeout,
            interval=0.1,
        )
        self.register_webhooks()
        if self.operator.check_ready is not None:
            self.operator.check_ready(self, max(5.0, timeout - (time.monotonic() - began)))
        self.ready_seconds = time.monotonic() - self.started_at
        return self.ready_seconds

    def webhook_configurations(self) -> list[Json]:
        if self.operator.webhook_dir is None:
            return []
        if self._ca_bundle is None:
            raise OperatorError("no serving certificate yet: start() first")
        manifests = kustomized_webhook_manifests(
            operator_module_dir(self.operator) / self.operator.webhook_dir
        )
        return local_webhook_configurations(
            manifests,
            port=self.ports["webhook"],
            ca_bundle=self._ca_bundle,
            prefix=self.operator.webhook_prefix,
        )

    def register_webhooks(self) -> None:
        """Create (or replace) our Mutating/ValidatingWebhookConfigurations."""
        configurations = self.webhook_configurations()
        if not configurations:
            return
        from kubernetes import client, config

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
                        raise OperatorError(
                            f"registering {configuration['metadata']['name']} failed: {exc}"
                        ) from exc
                    # Left by a run that was killed: ours to replace.
                    delete(configuration["metadata"]["name"])
                    create(configuration)
        self._webhooks_registered = True

    # -- stop -----------------------------------------------------------------------
    def unregister_webhooks(self) -> None:
        """Best effort: with failurePolicy Fail, a stale configuration would block every
        create of the operator's kinds (and their pods) on the cluster."""
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
                name = webhook_configuration_name(kind, self.operator.webhook_prefix)
                with contextlib.suppress(client.ApiException):
                    delete(name, _request_timeout=5)
        self._webhooks_registered = False

    def stop(self, grace: float = 10.0, *, unregister: bool = True) -> int | None:
        """Stop the operator; its exit code (None when it never ran). The log stays."""
        if unregister:
            self.unregister_webhooks()
            if self._prepared and self.operator.cleanup is not None:
                with contextlib.suppress(Exception):
                    self.operator.cleanup(self)
            self._prepared = False
        code: int | None = None
        if self._process is not None:
            code = stop_group(self._process, grace)
        (self.workdir / PID_FILE).unlink(missing_ok=True)
        for name in CONFIG_FILES:
            (self.workdir / name).unlink(missing_ok=True)
        shutil.rmtree(self.cert_dir, ignore_errors=True)
        shutil.rmtree(self.workdir / PRIVATE_DIR, ignore_errors=True)
        return code

    def __enter__(self) -> OperatorProcess:
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


def stop_operators_under(directory: Path, grace: float = 10.0) -> list[int]:
    """Stop every operator whose pid file is anywhere under `directory` (from another
    process, e.g. `fleetq dev down`): SIGTERM its process group, SIGKILL after `grace`.
    Only a process still running in its work directory (its cwd, where `start` put it)
    is signalled: pids are reused. The pids that were stopped."""
    stopped: list[int] = []
    pid_files = sorted(directory.rglob(PID_FILE))
    for pid_file in pid_files:
        try:
            pid = int(pid_file.read_text().strip())
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except (OSError, ValueError):
            pid_file.unlink(missing_ok=True)
            continue
        if Path(cwd) == pid_file.parent.resolve():
            signal_group(pid, signal.SIGTERM)
            stopped.append(pid)
    for pid in stopped:
        if not wait_gone([pid], grace):
            signal_group(pid, signal.SIGKILL)
            wait_gone([pid], 5.0)
    for pid_file in pid_files:
        pid_file.unlink(missing_ok=True)
    return stopped
