"""Run upstream Kueue's full manager out of cluster against one fleet member.

Interop tests and the MultiKueue benchmark need the real thing on the other end: the
`kueue` binary of one upstream version (`UpstreamKueueOptions.version`: v0.19.2, built by
`fleetq dev tools kueue`, or v0.17.0, by `fleetq dev tools kueue-v0.17`), with every
controller and integration, talking to a local apiserver through a kubeconfig. Out of
cluster it needs what its Deployment would have had:
- that version's own CRDs from its module (applied server-side first: the Workload CRD is too
  big for a client-side apply's annotation);
- its namespace (events, the MultiKueue kubeconfig Secrets);
- a Configuration file: internal certificate management off, leader election off,
  health, metrics and webhook servers on free loopback ports, the visibility server off;
- serving certificates for the webhook server (readiness waits for it to listen) and for
  the metrics server, which both versions read from a fixed path, `/etc/kueue/metrics/certs`.
  The binary runs in a private mount namespace (`unshare`) where that path is a bind mount
  of this run's temp directory, so runs never share or leave certificates behind.
No webhook configuration is registered: Jobs must be created suspended, and a Job meant
for MultiKueue must carry `spec.managedBy: kueue.x-k8s.io/multikueue` itself.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from devfleet.ports import allocate_ports
from devfleet.private_mounts import PrivateMountError, private_mounts
from devfleet.process_group import stop_group
from devfleet.process_readiness import wait_until_ready
from devfleet.toolchain import KUEUE_VERSION, GoTool, binary_path, kueue_tool, tool

METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Where upstream reads the metrics server's certificate when it does not manage its own."""


def upstream_module(version: str = KUEUE_VERSION) -> Path:
    """The read-only Go module source of one upstream Kueue version."""
    return Path.home() / "go" / "pkg" / "mod" / "sigs.k8s.io" / f"kueue@{version}"


def upstream_crds(version: str = KUEUE_VERSION) -> Path:
    return upstream_module(version) / "config" / "components" / "crd" / "bases"


WORKER_BUDGET_TOOL = "kueue-worker-budget"
WORKER_QPS_ENV = "KUEUE_BENCH_WORKER_QPS"
WORKER_BURST_ENV = "KUEUE_BENCH_WORKER_BURST"
"""Read by tools/go/kueue-worker-budget/worker-client-budget.patch."""

ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


class UpstreamKueueError(RuntimeError):
    """Upstream Kueue could not be prepared or started; the message says why (log tail)."""


@dataclass(frozen=True, slots=True)
class UpstreamKueueOptions:
    """The Configuration fields the fleet's uses of upstream Kueue vary."""

    version: str = KUEUE_VERSION
    """Which upstream Kueue runs (devfleet.toolchain.KUEUE_VERSIONS)."""
    namespace: str = "kueue-system"
    frameworks: tuple[str, ...] = ("batch/job",)
    qps: float = 50.0
    burst: int = 100
    multikueue_origin: str = "multikueue"
    dispatcher_name: str = ALL_AT_ONCE
    gc_interval: str = "1m"
    worker_lost_timeout: str = "15m"
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: {"VisibilityOnDemand": False})
    log_verbosity: int = 2
    """zap's level: 0 logs info and above, N > 0 adds V(N) debug lines."""
    worker_client_budget: bool = False
    """Run the `kueue-worker-budget` build (v0.19.2 with a benchmark patch) whose MultiKueue
    worker clients get `qps`/`burst` too; upstream's own run at client-go's 5/10."""


@dataclass(frozen=True, slots=True)
class UpstreamPorts:
    webhook: int
    health: int
    metrics: int


def upstream_configuration(
    options: UpstreamKueueOptions, ports: UpstreamPorts, cert_dir: Path
) -> dict[str, Any]:
    """A config.kueue.x-k8s.io/v1beta2 Configuration for one out-of-cluster manager."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": options.namespace,
        "manageJobsWithoutQueueName": False,
        "internalCertManagement": {"enable": False},
        "leaderElection": {"leaderElect": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
        "clientConnection": {"qps": options.qps, "burst": options.burst},
        "integrations": {"frameworks": list(options.frameworks)},
        "multiKueue": {
            "gcInterval": options.gc_interval,
            "origin": options.multikueue_origin,
            "workerLostTimeout": options.worker_lost_timeout,
            "dispatcherName": options.dispatcher_name,
        },
        "featureGates": dict(options.feature_gates),
    }


def kubectl(kubeconfig: Path, *args: str, timeout: float = 120.0) -> str:
    """Run kubectl against one cluster; UpstreamKueueError with its output on failure."""
    command = [str(binary_path("kubectl")), "--kubeconfig", str(kubeconfig), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise UpstreamKueueError(
            f"timed out after {timeout:.0f}s: kubectl {' '.join(args)}"
        ) from exc
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-2000:]
        raise UpstreamKueueError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{output}")
    return done.stdout


def install_upstream_crds(
    kubeconfig: Path, version: str = KUEUE_VERSION, timeout: float = 120.0
) -> list[str]:
    """Apply one version's CRDs from its module (taking over fields); wait until served."""
    crds = upstream_crds(version)
    if not any(crds.glob("*.yaml")):
        raise UpstreamKueueError(
            f"no CRDs in {crds}: run `go mod download sigs.k8s.io/kueue@{version}`"
        )
    return install_crd_files(kubeconfig, crds, timeout)


def install_crd_files(kubeconfig: Path, directory: Path, timeout: float = 120.0) -> list[str]:
    """Server-side apply every CRD file in `directory`; wait until all are Established."""
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise UpstreamKueueError(f"no CRD files (*.yaml) in {directory}")
    return install_crd_paths(kubeconfig, files, timeout)


def install_crd_paths(kubeconfig: Path, files: Sequence[Path], timeout: float = 120.0) -> list[str]:
    """Server-side apply these CRD files; wait until all are Established."""
    args = ["apply", "--server-side", "--force-conflicts", "-o", "name"]
    for path in files:
        args += ["-f", str(path)]
    names = [line.strip() for line in kubectl(kubeconfig, *args).splitlines() if line.strip()]
    deadline = time.monotonic() + timeout
    while True:
        # A CRD created a moment ago may have no status yet: kubectl wait then errors out
        # instead of waiting, so ask again until the deadline.
        left = max(1, int(deadline - time.monotonic()))
        wait = ["wait", "--for=condition=Established", f"--timeout={left}s", *names]
        try:
            kubectl(kubeconfig, *wait, timeout=left + 10)
            return names
        except UpstreamKueueError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def ensure_namespace(kubeconfig: Path, namespace: str) -> None:
    """Create the namespace unless it exists (idempotent)."""
    manifest = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as file:
        file.write(manifest)
        file.flush()
        kubectl(kubeconfig, "apply", "--server-side", "-f", file.name)


def write_serving_certs(directory: Path) -> None:
    """A self-signed CA and a loopback serving certificate as tls.crt / tls.key."""
    from core.manager.webhook_certs import issue

    bundle = issue(["127.0.0.1", "localhost"], dt.datetime.now(dt.UTC), "upstream-kueue")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(bundle.tls_cert)
    (directory / "tls.key").write_bytes(bundle.tls_key)
    (directory / "tls.key").chmod(0o600)


def _private_mount_wrapper(cert_dir: Path) -> list[str]:
    """Prefix that bind-mounts `cert_dir` on the fixed metrics path in a private namespace."""
    try:
        return private_mounts([(cert_dir, str(METRICS_CERT_DIR))])
    except PrivateMountError as exc:
        raise UpstreamKueueError(f"{exc}, to give kueue its metrics certs") from exc


class UpstreamKueue:
    """One upstream Kueue manager process against one cluster; a context manager.

    `start()` installs the CRDs and namespace, writes config and certificates into a temp
    directory and starts the binary (its own process group, output to `log_path`);
    `wait_ready()` polls /readyz; `stop()` sends SIGTERM, then SIGKILL after a grace
    period, and removes the temp directory.
    """

    def __init__(
        self,
        kubeconfig: Path,
        *,
        options: UpstreamKueueOptions | None = None,
        log_path: Path | None = None,
        install_crds: bool = True,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.options = options or UpstreamKueueOptions()
        self.workdir = Path(tempfile.mkdtemp(prefix="upstream-kueue-"))
        self.log_path = log_path or self.workdir / "kueue.log"
        self.install_crds = install_crds
        webhook, health, metrics = allocate_ports(3)
        self.ports = UpstreamPorts(webhook, health, metrics)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise UpstreamKueueError("upstream Kueue is not started")
        return self._process.pid

    @property
    def ready_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.health}/readyz"

    def _tool(self) -> GoTool:
        if not self.options.worker_client_budget:
            return kueue_tool(self.options.version)
        patched = tool(WORKER_BUDGET_TOOL)
        if patched.version != self.options.version:
            raise KeyError(f"{WORKER_BUDGET_TOOL} is built at {patched.version} only")
        return patched

    def environment(self) -> dict[str, str]:
        """The process's environment: the worker client budget for the patched build."""
        env = dict(os.environ)
        if self.options.worker_client_budget:
            env[WORKER_QPS_ENV] = str(self.options.qps)
            env[WORKER_BURST_ENV] = str(self.options.burst)
        return env

    def command(self) -> list[str]:
        """Write the config and certificates; return the argv that starts the manager."""
        try:
            go_tool = self._tool()
        except KeyError as exc:
            raise UpstreamKueueError(str(exc.args[0])) from exc
        binary = go_tool.binary("kueue")
        if not binary.exists():
            raise UpstreamKueueError(f"{binary} is missing: run `fleetq dev tools {go_tool.name}`")
        webhook_certs = self.workdir / "webhook-certs"
        metrics_certs = self.workdir / "metrics-certs"
        write_serving_certs(webhook_certs)
        write_serving_certs(metrics_certs)
        config = self.workdir / "config.yaml"
        document = upstream_configuration(self.options, self.ports, webhook_certs)
        config.write_text(yaml.safe_dump(document, sort_keys=False))
        return [
            *_private_mount_wrapper(metrics_certs),
            str(binary),
            f"--config={config}",
            f"--kubeconfig={self.kubeconfig}",
            f"--zap-log-level={self.options.log_verbosity or 'info'}",
        ]

    def start(self) -> UpstreamKueue:
        if self.install_crds:
            install_upstream_crds(self.kubeconfig, self.options.version)
        ensure_namespace(self.kubeconfig, self.options.namespace)
        argv = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=self.environment(),
            )
        return self

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds until /readyz answered 200; UpstreamKueueError if it exits or times out."""
        process = self._process
        assert process is not None, "start() first"
        return wait_until_ready(
            "upstream Kueue",
            self.ready_url,
            exit_code=process.poll,
            log_excerpt=lambda: f"log {self.log_path}:\n{self.log_tail()}",
            error=UpstreamKueueError,
            timeout=timeout,
            interval=0.3,
        )

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, grace: float = 15.0) -> int | None:
        """Stop the manager (and anything it started); return its exit code."""
        code: int | None = None
        process = self._process
        if process is not None:
            code = stop_group(process, grace)
        if not self.log_path.is_relative_to(self.workdir):
            shutil.rmtree(self.workdir, ignore_errors=True)
            return code
        for child in self.workdir.iterdir():  # keep the log, drop config and keys
            if child == self.log_path:
                continue
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        return code

    def __enter__(self) -> UpstreamKueue:
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
