"""Take one member of a running fleet down and bring it back, to test outages for real.

kwokctl's binary runtime runs every component as a plain process and records, per cluster
(`<fleet>/kwok/clusters/<kwok name>/`), the component's pid (`pids/<component>.pid`), its
log (`logs/<component>.log`) and how it was started (`kwok.yaml`: binary, args, work dir).
From that record this module can:

- kill the kube-apiserver (SIGKILL: connections are refused, like a crashed control plane)
  and start it again with exactly the arguments kwokctl used, on the same port and
  certificates, so clients holding the old kubeconfig reconnect unchanged;
- freeze and thaw it (SIGSTOP/SIGCONT: connections are accepted but never answered, like
  a network partition);
- stop and start the whole cluster through `kwokctl stop|start cluster`.

etcd keeps running while only the apiserver is down, so no state is lost. The restarted
apiserver is recorded in the pid file, which keeps `kwokctl delete` and `Fleet.down`
able to find it. Usage:

    control = MemberControl(Fleet("dev"), "worker-1")
    control.kill_apiserver()      # returns once the port refuses connections
    ...
    control.start_apiserver()     # returns once /readyz answers 200
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet.cluster_access import ClusterAccess
from devfleet.fleet import Fleet
from devfleet.process_group import is_alive

APISERVER = "kube-apiserver"


class MemberControlError(RuntimeError):
    """The member cannot be controlled as asked (not running, no record, did not start)."""


@dataclass(frozen=True, slots=True)
class ComponentLaunch:
    """How kwokctl starts one component: what `kwok.yaml` records for it."""

    name: str
    binary: str
    args: tuple[str, ...]
    work_dir: Path

    @property
    def command(self) -> list[str]:
        return [self.binary, *self.args]


def component_launch(kwok_config: Path, component: str) -> ComponentLaunch:
    """Read a component's binary, arguments and work dir from a cluster's `kwok.yaml`."""
    for document in yaml.safe_load_all(kwok_config.read_text()):
        if not isinstance(document, dict) or document.get("kind") != "KwokctlConfiguration":
            continue
        for entry in document.get("components") or ():
            if entry.get("name") == component:
                return ComponentLaunch(
                    name=component,
                    binary=str(entry["binary"]),
                    args=tuple(str(arg) for arg in entry.get("args") or ()),
                    work_dir=Path(entry.get("workDir") or kwok_config.parent),
                )
    raise MemberControlError(f"{kwok_config} records no component {component!r}")


class MemberControl:
    """Outage controls for one cluster (by role: "manager", "worker-1", ...) of a fleet."""

    def __init__(self, fleet: Fleet, role: str) -> None:
        record = fleet.record()
        if record is None:
            raise MemberControlError(f"fleet {fleet.name!r} is not up")
        if role not in record.clusters:
            raise MemberControlError(f"fleet {fleet.name!r} has no cluster {role!r}")
        self.fleet = fleet
        self.role = role
        self.kwok_name = record.clusters[role]
        self.cluster_dir = fleet.kwokctl.workdir / "clusters" / self.kwok_name
        self.access = ClusterAccess(role, Path(record.kubeconfigs[role]), record.servers[role])

    # -- the apiserver ---------------------------------------------------------------

    def apiserver_pid(self) -> int | None:
        """The running apiserver's pid (None when it is not running)."""
        return self._running_pid(APISERVER)

    def kill_apiserver(self, timeout: float = 15.0) -> None:
        """SIGKILL the apiserver; return once its port refuses connections."""
        pid = self._running_pid(APISERVER)
        if pid is None:
            raise MemberControlError(f"{self.role}: the apiserver is not running")
        _signal(pid, signal.SIGCONT)  # a frozen process dies just as well, but say so
        _signal(pid, signal.SIGKILL)
        _reap_when_gone(pid, timeout)
        _wait_port(self.access.server, open_=False, timeout=timeout)

    def start_apiserver(self, *, wait_ready: bool = True, timeout: float = 60.0) -> int:
        """Start the apiserver as kwokctl did (same args, log, pid file); its new pid."""
        if self._running_pid(APISERVER) is not None:
            raise MemberControlError(f"{self.role}: the apiserver is already running")
        launch = component_launch(self.cluster_dir / "kwok.yaml", APISERVER)
        log_path = launch.work_dir / "logs" / f"{APISERVER}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                launch.command,
                cwd=launch.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives the caller, like kwokctl's own processes
            )
        self._pid_file(APISERVER).write_text(str(process.pid))
        if wait_ready:
            self.wait_serving(timeout)
        return process.pid

    def pause_apiserver(self) -> None:
        """SIGSTOP the apiserver: connections open but no request is answered."""
        pid = self._running_pid(APISERVER)
        if pid is None:
            raise MemberControlError(f"{self.role}: the apiserver is not running")
        _signal(pid, signal.SIGSTOP)

    def resume_apiserver(self, *, wait_ready: bool = True, timeout: float = 30.0) -> None:
        pid = self._running_pid(APISERVER)
        if pid is None:
            raise MemberControlError(f"{self.role}: the apiserver is not running")
        _signal(pid, signal.SIGCONT)
        if wait_ready:
            self.wait_serving(timeout)

    @contextlib.contextmanager
    def apiserver_down(self) -> Iterator[None]:
        """The apiserver killed inside the block, and started again (and ready) after it."""
        self.kill_apiserver()
        try:
            yield
        finally:
            if self.apiserver_pid() is None:
                self.start_apiserver()

    # -- the whole cluster -----------------------------------------------------------

    def stop_cluster(self) -> None:
        """Stop every component (etcd too) through kwokctl; state stays on disk."""
        self.fleet.kwokctl.run("stop", "cluster", "--name", self.kwok_name, timeout=120)
        _wait_port(self.access.server, open_=False, timeout=30)

    def start_cluster(self, *, wait_ready: bool = True, timeout: float = 120.0) -> None:
        self.fleet.kwokctl.run("start", "cluster", "--name", self.kwok_name, timeout=timeout)
        if wait_ready:
            self.wait_serving(timeout)

    # -- readiness -------------------------------------------------------------------

    def wait_serving(self, timeout: float = 60.0) -> None:
        """Block until the apiserver's /readyz answers 200."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                status = _readyz_status(self.access)
            except Exception as error:  # refused, reset, TLS not up yet: all mean "not yet"
                last = str(error).splitlines()[0] if str(error) else type(error).__name__
            else:
                if status == 200:
                    return
                last = f"/readyz returned {status}"
            time.sleep(0.3)
        raise MemberControlError(
            f"{self.role}: apiserver at {self.access.server} not ready after {timeout:g}s: {last}"
        )

    # -- pid files -------------------------------------------------------------------

    def _pid_file(self, component: str) -> Path:
        return self.cluster_dir / "pids" / f"{component}.pid"

    def _running_pid(self, component: str) -> int | None:
        """The recorded pid, if that process is alive and really is the component."""
        try:
            pid = int(self._pid_file(component).read_text().strip())
        except (OSError, ValueError):
            return None
        if not is_alive(pid):
            return None
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            return None
        # A recycled pid belongs to someone else: never signal it.
        return pid if command.decode(errors="replace").endswith(component) else None


def _readyz_status(member: ClusterAccess) -> int:
    with member.api_client() as api_client:
        response: Any = api_client.call_api("GET", f"{member.server}/readyz", _request_timeout=3)
        return int(response.status)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap_when_gone(pid: int, timeout: float) -> None:
    """Wait for the process to die; reap it when it was our child (a restarted apiserver)."""
    deadline = time.monotonic() + timeout
    while is_alive(pid):
        if time.monotonic() >= deadline:
            raise MemberControlError(f"process {pid} still alive {timeout:g}s after SIGKILL")
        time.sleep(0.05)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _wait_port(server: str, *, open_: bool, timeout: float) -> None:
    from urllib.parse import urlparse

    url = urlparse(server)
    address = (url.hostname or "127.0.0.1", url.port or 443)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(address, timeout=0.5):
                is_open = True
        except OSError:
            is_open = False
        if is_open == open_:
            return
        if time.monotonic() >= deadline:
            state = "open" if open_ else "closed"
            raise MemberControlError(f"{server} did not become {state} within {timeout:g}s")
        time.sleep(0.1)
