"""Start fleetq's hub and worker agents as real processes against a fleet's clusters.

The hub runs on the manager with leader election off and no admission webhooks (the jobs
are created suspended and marked for MultiKueue, as upstream's out-of-cluster manager gets
them); each agent runs on one worker. Both are `MeasuredProcess`es, so the benchmark reads
their CPU time and peak memory the same way it reads upstream Kueue's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.scheduler.managers import fleetq_executable
from bench.scheduler.measured_process import MeasuredProcess
from devfleet.ports import allocate_ports
from devfleet.process_readiness import wait_until_ready

CAPACITY_AWARE = "fleetq.dev/capacity-aware"


class FleetqStartError(RuntimeError):
    """A hub or agent exited or never became ready; the message carries its log's tail."""


@dataclass(frozen=True, slots=True)
class FleetqProcess:
    """One running hub or agent and where to ask it about itself."""

    role: str
    process: MeasuredProcess
    ready_url: str
    metrics_url: str


def _configuration(
    namespace: str,
    *,
    health: int,
    metrics: int,
    qps: float,
    burst: int,
    multikueue: dict[str, Any],
    frameworks: tuple[str, ...] | None = ("batch/job",),
) -> str:
    """The Configuration file; `frameworks` None leaves `integrations` out (an agent then
    manages every job kind fleetq has)."""
    document = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": namespace,
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": qps, "burst": burst},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics}"},
    }
    if frameworks is not None:
        document["integrations"] = {"frameworks": list(frameworks)}
    if multikueue:
        document["multiKueue"] = multikueue
    return yaml.safe_dump(document, sort_keys=False)


def _start(role: str, argv: list[str], log_path: Path, ports: tuple[int, int]) -> FleetqProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = MeasuredProcess(argv, log_path=log_path, env=env)
    health, metrics = ports
    return FleetqProcess(
        role,
        process,
        f"http://127.0.0.1:{health}/readyz",
        f"http://127.0.0.1:{metrics}/metrics",
    )


def start_hub(
    kubeconfig: Path,
    workdir: Path,
    *,
    dispatcher: str = CAPACITY_AWARE,
    origin: str = "multikueue",
    namespace: str = "kueue-system",
    qps: float = 50.0,
    burst: int = 100,
    gc_interval: str = "1m",
    log_level: str = "warning",
    frameworks: tuple[str, ...] = ("batch/job",),
    extra_args: Sequence[str] = (),
) -> FleetqProcess:
    """`fleetq hub` on the manager with MultiKueue settings as upstream's Configuration
    (`extra_args`: more of the hub's flags, say `--dashboard-port`)."""
    health, metrics = allocate_ports(2)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "hub-config.yaml"
    multikueue: dict[str, Any] = {
        "origin": origin,
        "dispatcherName": dispatcher,
        "gcInterval": gc_interval,
        # The same budget towards each worker as towards the manager (fleetq's extension;
        # upstream's worker clients have no setting and run at client-go's 5 QPS).
        "workerClientConnection": {"qps": qps, "burst": burst},
    }
    config.write_text(
        _configuration(
            namespace,
            health=health,
            metrics=metrics,
            qps=qps,
            burst=burst,
            multikueue=multikueue,
            frameworks=frameworks,
        )
    )
    argv = [
        str(fleetq_executable()),
        "hub",
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
        "--no-webhooks",
        "--log-level",
        log_level,
        *extra_args,
    ]
    return _start("hub", argv, workdir / "hub.log", (health, metrics))


def start_agent(
    kubeconfig: Path,
    workdir: Path,
    cluster_name: str,
    *,
    qps: float = 50.0,
    burst: int = 100,
    log_level: str = "warning",
) -> FleetqProcess:
    """`fleetq agent` on one worker (its WorkerCapacity named `cluster_name`)."""
    health, metrics = allocate_ports(2)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / f"agent-{cluster_name}.yaml"
    config.write_text(
        _configuration(
            "kueue-system",
            health=health,
            metrics=metrics,
            qps=qps,
            burst=burst,
            multikueue={},
            frameworks=None,
        )
    )
    argv = [
        str(fleetq_executable()),
        "agent",
        "--kubeconfig",
        str(kubeconfig),
        "--config",
        str(config),
        "--cluster-name",
        cluster_name,
        "--log-level",
        log_level,
    ]
    return _start(
        f"agent {cluster_name}", argv, workdir / f"agent-{cluster_name}.log", (health, metrics)
    )


def wait_ready(started: FleetqProcess, timeout: float = 90.0) -> float:
    """Seconds until the process answered its readiness URL with 200."""

    def exit_code() -> int | None:
        usage = started.process.poll()
        return None if usage is None else usage.exit_code

    return wait_until_ready(
        started.role,
        started.ready_url,
        exit_code=exit_code,
        log_excerpt=lambda: f"log {started.process.log_path}:\n{started.process.log_tail()}",
        error=FleetqStartError,
        timeout=timeout,
    )
