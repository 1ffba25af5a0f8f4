"""The two managers under test and how each is started against a benchmark cluster.

- upstream: Kueue v0.19.2's `minimalkueue` (core controllers + scheduler, no webhooks, no
  job integrations; devfleet.toolchain.KUEUE_VERSION): the program upstream measures
  itself with. Its client is fixed at
  50 QPS / 100 burst (Kueue's defaults).
- fleetq: `fleetq hub` with leader election off, no admission webhooks and the same
  client budget (50 / 100), so neither manager gets more apiserver writes per second.
Both expose Prometheus metrics on a loopback port, scraped once when the run is recorded.
"""

from __future__ import annotations

import enum
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.scheduler.measured_process import MeasuredProcess
from devfleet.ports import allocate_ports
from devfleet.toolchain import KUEUE_VERSION, binary_path
from devfleet.upstream_kueue import upstream_crds

ROOT = Path(__file__).resolve().parents[2]
FLEETQ_CRDS = ROOT / "charts" / "fleetq-hub" / "crds"
UPSTREAM_CRDS = upstream_crds(KUEUE_VERSION)

CLIENT_QPS = 50
CLIENT_BURST = 100
"""minimalkueue's fixed client budget (Kueue's defaults); fleetq is given the same."""


class ManagerKind(enum.StrEnum):
    UPSTREAM = "upstream"
    FLEETQ = "fleetq"


class PrerequisiteMissing(RuntimeError):
    """A tool or file the benchmark needs is absent; the message says how to get it."""


class ManagerStartError(RuntimeError):
    """The manager exited or never became ready; the message carries its log's tail."""


@dataclass(frozen=True, slots=True)
class ManagerLaunch:
    """How to start one manager and how to talk to it once started."""

    kind: ManagerKind
    argv: tuple[str, ...]
    crd_dir: Path
    ready_url: str
    metrics_url: str
    user_agent_prefix: str
    """How the manager's requests show up in the apiserver's audit log."""


def fleetq_executable() -> Path:
    beside = Path(sys.executable).with_name("fleetq")
    if beside.exists():
        return beside
    found = shutil.which("fleetq")
    if found is None:
        raise PrerequisiteMissing("the `fleetq` command is not installed: pip install -e '.[dev]'")
    return Path(found)


def check_prerequisites(kind: ManagerKind) -> None:
    """Fail early, with the fix, when something the leg needs is missing."""
    needed = ["runner", "kubectl", "kube-apiserver", "etcd", "kwokctl"]
    if kind is ManagerKind.UPSTREAM:
        needed.append("minimalkueue")
    missing = [name for name in needed if not binary_path(name).exists()]
    if missing:
        raise PrerequisiteMissing(
            f"tools not built: {', '.join(missing)}. Run `make tools` (cached; a cold build "
            "takes ~25 min)."
        )
    crds = UPSTREAM_CRDS if kind is ManagerKind.UPSTREAM else FLEETQ_CRDS
    if not any(crds.glob("*.yaml")):
        hint = (
            f"`go mod download sigs.k8s.io/kueue@{KUEUE_VERSION}`"
            if kind is ManagerKind.UPSTREAM
            else "`make crds`"
        )
        raise PrerequisiteMissing(f"no CRDs in {crds}; run {hint}")
    if kind is ManagerKind.FLEETQ:
        _check_fleetq_hub()


def _check_fleetq_hub() -> None:
    command = [str(fleetq_executable()), "hub", "--help"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired as exc:
        raise PrerequisiteMissing("`fleetq hub --help` did not answer within 60 s") from exc
    if done.returncode != 0:
        raise PrerequisiteMissing(
            "`fleetq hub` is not available (is the hub command installed?):\n"
            + (done.stdout + done.stderr).strip()[-1500:]
        )


def fleetq_configuration(health_port: int, metrics_port: int) -> str:
    """A Configuration for a lone hub: no leader election, upstream's client budget, and
    waitForPodsReady off, as in minimalkueue (its Configuration is never defaulted)."""
    return (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
        "kind: Configuration\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
        "featureGates:\n"
        "  DisableWaitForPodsReady: true\n"
        "clientConnection:\n"
        f"  qps: {CLIENT_QPS}\n"
        f"  burst: {CLIENT_BURST}\n"
        "health:\n"
        f'  healthProbeBindAddress: "127.0.0.1:{health_port}"\n'
        "metrics:\n"
        f'  bindAddress: "127.0.0.1:{metrics_port}"\n'
    )


def prepare_launch(
    kind: ManagerKind,
    kubeconfig: Path,
    workdir: Path,
    fleetq_log_level: str = "warning",
    *,
    topology: bool = False,
) -> ManagerLaunch:
    """Pick ports and write config files for one manager; starts nothing.

    `topology`: the generator makes a Topology and a TAS flavor, so minimalkueue gets
    `--enableTAS` (its TAS controllers and indexers are off otherwise, and every TAS
    workload would wait); the hub always runs its TAS parts.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if kind is ManagerKind.UPSTREAM:
        (metrics_port,) = allocate_ports(1)
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        argv: tuple[str, ...] = (
            str(binary_path("minimalkueue")),
            "--kubeconfig",
            str(kubeconfig),
            "--metricsPort",
            str(metrics_port),
            *(("--enableTAS",) if topology else ()),
        )
        return ManagerLaunch(kind, argv, UPSTREAM_CRDS, metrics, metrics, "minimalkueue/")
    health_port, metrics_port = allocate_ports(2)
    config = workdir / "fleetq-config.yaml"
    config.write_text(fleetq_configuration(health_port, metrics_port))
    argv = (
        str(fleetq_executable()),
        "hub",
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
        "--no-webhooks",  # minimalkueue serves none either
        "--log-level",
        fleetq_log_level,
    )
    return ManagerLaunch(
        kind,
        argv,
        FLEETQ_CRDS,
        f"http://127.0.0.1:{health_port}/readyz",
        f"http://127.0.0.1:{metrics_port}/metrics",
        "fleetq/",
    )


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """Status and body of a plain GET; (0, reason) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc)


def wait_ready(process: MeasuredProcess, launch: ManagerLaunch, timeout: float = 120.0) -> float:
    """Wait until the manager answers its readiness URL; return the seconds it took."""
    started = time.monotonic()
    while True:
        usage = process.poll()
        if usage is not None:
            raise ManagerStartError(
                f"{launch.kind} manager exited (code {usage.exit_code}) before it was ready; "
                f"log {process.log_path}:\n{process.log_tail()}"
            )
        status, _ = http_get(launch.ready_url, timeout=2.0)
        if status == 200:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise ManagerStartError(
                f"{launch.kind} manager not ready after {timeout:.0f}s ({launch.ready_url}); "
                f"log {process.log_path}:\n{process.log_tail()}"
            )
        time.sleep(0.25)
