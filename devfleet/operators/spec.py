"""What the launcher needs to know of one operator: an `Operator` is data plus two hooks.

The launcher (`process.OperatorProcess`) does what is the same for every operator; an
operator module (e.g. `operators/jobset.py`) says only what differs: its tool and binary,
where its CRDs and webhook manifests are in its Go module, how its command line (and any
config file) looks given the ports and certificate the launcher chose, and optionally a
readiness check beyond its health URL (JobSet's: a dry-run create comes back defaulted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from devfleet.operators.process import OperatorProcess

WEBHOOK_HOST = "127.0.0.1"
"""Every out-of-cluster server binds loopback: the apiservers run on this machine."""


class OperatorError(RuntimeError):
    """An operator could not be prepared, started or checked; the message says why (with
    its log's tail when it ran)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """What the launcher prepared for one run; the operator's `command` builds on it."""

    kubeconfig: Path
    workdir: Path
    """The process's cwd; a config file goes here as `config.yaml` (removed on stop; the
    log stays)."""
    cert_dir: Path
    """tls.crt / tls.key for 127.0.0.1 (webhook and metrics servers)."""
    ports: Mapping[str, int]
    """A free loopback port per name in `Operator.port_names`."""
    module_dir: Path
    qps: float
    burst: int

    def address(self, port_name: str) -> str:
        return f"{WEBHOOK_HOST}:{self.ports[port_name]}"


@dataclass(frozen=True, slots=True)
class Operator:
    """One third-party operator the fleet can run (see `catalog.OPERATORS`)."""

    name: str
    """Catalog key; also names work directories and webhook configurations."""
    title: str
    """For messages: "the JobSet controller"."""
    tool: str
    """The `devfleet.toolchain` tool that builds it (`fleetq dev tools <tool>`)."""
    binary: str
    module: str
    version: str
    """The Go module (and exact version) its CRDs and manifests are read from."""
    command: Callable[[Launch], list[str]]
    """Writes any config file into `launch.workdir`; the argv that starts the binary."""
    crd_dirs: tuple[str, ...] = ()
    """Directories (relative to the module) whose *.yaml are CRDs, server-side applied."""
    webhook_dir: str | None = None
    """A kustomize directory with `manifests.yaml` (relative to the module), or None when
    the operator needs no webhooks."""
    port_names: tuple[str, ...] = ("webhook", "health", "metrics")
    ready_port: str = "health"
    ready_path: str = "/readyz"
    check_ready: Callable[[OperatorProcess, float], None] | None = None
    """Called after the health URL answered and webhooks were registered, with the
    seconds left: raises OperatorError unless the operator really serves."""
    requires: tuple[str, ...] = ()
    """Operators that must run on the same cluster (Kubeflow Trainer creates JobSets)."""
    on_api_only: bool = True
    """Whether it also runs on a cluster without controller-manager, scheduler and nodes
    (the API-only MultiKueue manager of the tests), where it must leave jobs managed by
    MultiKueue alone."""

    @property
    def webhook_prefix(self) -> str:
        """Our webhook configurations are `<prefix>-mutating` / `<prefix>-validating`."""
        return f"fleetq-{self.name}"
