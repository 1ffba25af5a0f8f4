"""Bring a local fleet (one manager + N workers, each a real control plane) up and down.

A fleet has a name ("dev" for a developer, a unique one per test session) and a state
directory holding kwokctl's work directory, one kubeconfig per cluster (certificate data
inline) and `fleet.json`, the record `status` and `down` read. `up` refuses to start over a
fleet that is still answering, and quietly clears one whose processes are gone (after a
reboot, say). `down` deletes every cluster, then makes sure no process of the fleet is left
and every port it used is closed, before removing the state directory.

A full fleet also runs one JobSet controller (devfleet.jobset_controller) per cluster, the
API-only manager included, out of cluster with its work directory under `jobset/<role>/`
of the state directory; `down` stops them first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_readiness import install_nodes, wait_ready
from devfleet.fleet_spec import FleetSpec
from devfleet.jobset_controller import (
    JobSetController,
    JobSetControllerError,
    controller_binary,
    stop_controllers_under,
)
from devfleet.kwok_pod_logs import pod_log_documents
from devfleet.kwok_stages import stage_documents
from devfleet.kwokctl import PORT_OPTIONS, Kwokctl, KwokctlError, check_binaries
from devfleet.ports import allocate_ports

Progress = Callable[[str], None]


class FleetError(RuntimeError):
    """Something the user must act on (already running, tools missing, start failed)."""


def fleet_home() -> Path:
    """Root of all fleets' state; override with FLEETQ_HOME."""
    override = os.environ.get("FLEETQ_HOME")
    if override:
        return Path(override)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleetq"


@dataclass(frozen=True)
class FleetRecord:
    """What fleet.json holds: enough to find, check and remove every cluster."""

    name: str
    lite: bool
    clusters: dict[str, str]  # cluster role name -> kwokctl cluster name
    kubeconfigs: dict[str, str]
    servers: dict[str, str]
    started_at: float
    ready_seconds: float


class Fleet:
    """One named fleet's state directory and the operations on it."""

    def __init__(self, name: str = "dev", home: Path | None = None) -> None:
        self.name = name
        self.dir = (home or fleet_home()) / "fleets" / name
        self.kwokctl = Kwokctl(self.dir / "kwok")
        self.jobset_controllers: dict[str, JobSetController] = {}

    @property
    def jobset_dir(self) -> Path:
        """Work directories (config, certificates, log, pid) of the JobSet controllers."""
        return self.dir / "jobset"

    @property
    def record_path(self) -> Path:
        return self.dir / "fleet.json"

    def kwok_cluster_name(self, role: str) -> str:
        return f"fq-{self.name}-{role}"

    def record(self) -> FleetRecord | None:
        if not self.record_path.exists():
            return None
        return FleetRecord(**json.loads(self.record_path.read_text()))

    def access(self) -> RunningFleet:
        record = self.record()
        if record is None:
            raise FleetError(f"fleet {self.name!r} is not up; run `fleetq dev up`")
        members = [
            ClusterAccess(role, Path(record.kubeconfigs[role]), record.servers[role])
            for role in record.clusters
        ]
        return RunningFleet(self.name, record.lite, members[0], tuple(members[1:]))

    def answering(self) -> list[str]:
        """Roles whose apiserver port still accepts connections."""
        record = self.record()
        if record is None:
            return []
        return [role for role, server in record.servers.items() if _port_open(server)]

    # -- up ---------------------------------------------------------------------------
    def up(
        self,
        spec: FleetSpec,
        *,
        lite: bool,
        progress: Progress = print,
        api_only: frozenset[str] = frozenset(),
        jobset: bool | None = None,
    ) -> RunningFleet:
        """Start the fleet; clusters named in `api_only` run lite even in a full fleet.

        `jobset` runs a JobSet controller against every cluster (default: in a full fleet).
        """
        check_binaries()
        with_jobset = not lite if jobset is None else jobset
        if with_jobset:
            try:
                controller_binary()
            except JobSetControllerError as exc:
                raise FleetError(str(exc)) from exc
        if self.record() is not None:
            alive = self.answering()
            if alive:
                mode = "lite" if self.record().lite else "full"  # type: ignore[union-attr]
                raise FleetError(
                    f"fleet {self.name!r} ({mode}) is already running: {', '.join(alive)} "
                    f"answering. Use `fleetq dev status` to see it or `fleetq dev down` first."
                )
            progress(f"fleet {self.name!r}: clearing a stale record (its clusters are gone)")
            self.down(progress=lambda _: None)
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.kwokctl.workdir.mkdir(parents=True, exist_ok=True)
        stages = [] if lite else [*stage_documents(), *pod_log_documents(self.dir)]
        lite_roles = {c.name for c in spec.clusters} if lite else set(api_only)
        roles = [cluster.name for cluster in spec.clusters]
        names = {role: self.kwok_cluster_name(role) for role in roles}
        mode = "lite: etcd + apiserver" if lite else "full: etcd, apiserver, controller-manager, "
        mode += "" if lite else "scheduler, kwok"
        progress(f"fleet {self.name!r}: starting {len(roles)} clusters ({mode})")
        try:
            self._create_clusters(
                names, lite_roles=lite_roles, stages=stages, progress=progress, started=started
            )
            kubeconfigs = self._write_kubeconfigs(names)
            servers = {role: _server_of(Path(path)) for role, path in kubeconfigs.items()}
            members = [
                ClusterAccess(role, Path(kubeconfigs[role]), servers[role]) for role in roles
            ]
            fleet = RunningFleet(self.name, lite, members[0], tuple(members[1:]))
            record = FleetRecord(self.name, lite, names, kubeconfigs, servers, time.time(), 0.0)
            self.record_path.write_text(json.dumps(asdict(record), indent=2))
            self._prepare_clusters(
                fleet,
                spec,
                lite_roles=lite_roles,
                progress=progress,
                started=started,
                jobset=with_jobset,
            )
        except BaseException:
            progress(f"fleet {self.name!r}: start failed, removing what was started")
            self.down(progress=lambda _: None)
            raise
        elapsed = time.monotonic() - started
        record = FleetRecord(self.name, lite, names, kubeconfigs, servers, time.time(), elapsed)
        self.record_path.write_text(json.dumps(asdict(record), indent=2))
        progress(f"fleet {self.name!r}: ready in {elapsed:.1f}s")
        return fleet

    def _create_clusters(
        self,
        names: dict[str, str],
        *,
        lite_roles: set[str],
        stages: list[str],
        progress: Progress,
        started: float,
    ) -> None:
        ports = allocate_ports(len(PORT_OPTIONS) * len(names))
        procs = {}
        for index, (role, name) in enumerate(names.items()):
            mine = ports[index * len(PORT_OPTIONS) : (index + 1) * len(PORT_OPTIONS)]
            lite = role in lite_roles
            procs[role] = self.kwokctl.start_create(
                name, lite=lite, ports=mine, stages=[] if lite else stages
            )
        failures = []
        for role, proc in procs.items():
            code = proc.wait(timeout=300)
            if code != 0:
                failures.append(
                    f"{role}: kwokctl exit {code}\n{self.kwokctl.creation_log(names[role])}"
                )
            else:
                progress(f"  [{time.monotonic() - started:5.1f}s] {role}: control plane started")
        if failures:
            raise FleetError("could not start clusters:\n" + "\n".join(failures))

    def _write_kubeconfigs(self, names: dict[str, str]) -> dict[str, str]:
        directory = self.dir / "kubeconfigs"
        directory.mkdir(exist_ok=True)
        paths = {}
        for role, name in names.items():
            path = directory / f"{role}.kubeconfig"
            path.write_text(self.kwokctl.kubeconfig(name))
            path.chmod(0o600)
            paths[role] = str(path)
        return paths

    def _prepare_clusters(
        self,
        fleet: RunningFleet,
        spec: FleetSpec,
        *,
        lite_roles: set[str],
        progress: Progress,
        started: float,
        jobset: bool = False,
    ) -> None:
        specs = {cluster.name: cluster for cluster in spec.clusters}

        def prepare(member: ClusterAccess) -> str:
            cluster_spec = specs[member.name]
            lite = member.name in lite_roles
            if not lite:
                install_nodes(member, cluster_spec)
            controller = None
            if jobset:
                # Started before the wait for nodes, ready (webhooks checked) after it.
                controller = JobSetController(
                    member.kubeconfig, self.jobset_dir / member.name, label=member.name
                )
                self.jobset_controllers[member.name] = controller
                try:
                    controller.start()
                except JobSetControllerError as exc:
                    raise FleetError(f"{member.name}: {exc}") from exc
            wait_ready(member, cluster_spec, lite=lite, timeout=180)
            line = f"  [{time.monotonic() - started:5.1f}s] {member.name}: ready"
            if controller is not None:
                try:
                    seconds = controller.wait_ready()
                except JobSetControllerError as exc:
                    raise FleetError(f"{member.name}: {exc}") from exc
                line += (
                    f", JobSet controller pid {controller.pid} ready in {seconds:.1f}s "
                    f"(log {controller.log_path})"
                )
            return line

        with ThreadPoolExecutor(max_workers=len(fleet.all)) as pool:
            for line in pool.map(prepare, fleet.all):
                progress(line)

    # -- down -------------------------------------------------------------------------
    def down(self, progress: Progress = print) -> list[str]:
        """Delete every cluster and leave no process, port or file behind; return leftovers."""
        record = self.record()
        ports = [urlparse(s).port for s in (record.servers.values() if record else ())]
        names = list(record.clusters.values()) if record else []
        # The JobSet controllers first: they would only log errors while clusters go away.
        stop_controllers_under(self.jobset_dir)
        for controller in self.jobset_controllers.values():  # reap the ones this process started
            controller.stop(grace=1.0, unregister=False)
        self.jobset_controllers.clear()
        with contextlib.suppress(KwokctlError):  # a broken work dir still gets cleaned below
            names = sorted(set(names) | set(self.kwokctl.clusters()))
        with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
            for name, error in zip(names, pool.map(self._delete_quietly, names), strict=True):
                progress(f"  {name}: {'deleted' if error is None else 'delete failed: ' + error}")
        killed = _kill_processes_under(self.dir)
        if killed:
            progress(f"  stopped {len(killed)} leftover process(es): {', '.join(killed)}")
        still_open = _ports_still_open([p for p in ports if p], timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
        if still_open:
            progress(f"  WARNING: ports still listening: {', '.join(still_open)}")
        return still_open

    def _delete_quietly(self, name: str) -> str | None:
        try:
            self.kwokctl.delete(name)
        except KwokctlError as exc:
            return str(exc).splitlines()[0]
        return None


def _server_of(kubeconfig: Path) -> str:
    import yaml

    data: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    return str(data["clusters"][0]["cluster"]["server"])


def _port_open(server: str) -> bool:
    url = urlparse(server)
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 443), timeout=0.5):
            return True
    except OSError:
        return False


def _kill_processes_under(directory: Path) -> list[str]:
    """Stop any process whose command line mentions the fleet's directory (a safety net)."""
    marker = str(directory)
    found: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append((int(entry.name), cmdline.split(" ", 1)[0].rsplit("/", 1)[-1]))
    for pid, _ in found:
        _signal(pid, signal.SIGTERM)
    _wait_gone([pid for pid, _ in found], timeout=10)
    for pid, _ in found:
        _signal(pid, signal.SIGKILL)
    _wait_gone([pid for pid, _ in found], timeout=5)  # a killed process frees ports on exit
    return [f"{name}[{pid}]" for pid, name in found]


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie (which holds no sockets)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)


def _ports_still_open(ports: list[int], timeout: float) -> list[str]:
    """Ports that keep accepting connections for `timeout` seconds (shutdown takes a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        still_open = [str(p) for p in ports if _port_open(f"https://127.0.0.1:{p}")]
        if not still_open or time.monotonic() >= deadline:
            return still_open
        time.sleep(0.2)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
