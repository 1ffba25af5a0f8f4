"""Bring a local fleet (one manager + N workers, each a real control plane) up and down.

A fleet has a name ("dev" for a developer, a unique one per test session) and a state
directory holding kwokctl's work directory, one kubeconfig per cluster (certificate data
inline) and `fleet.json`, the record `status` and `down` read. `up` refuses to start over a
fleet that is still answering, and quietly clears one whose processes are gone (after a
reboot, say). `down` deletes every cluster, then makes sure no process of the fleet is left
and every port it used is closed, before removing the state directory.

A full fleet also runs the third-party operators of `devfleet.operators.catalog` (JobSet's
controller and the other job kinds' operators) on every cluster, out of cluster, with their
work directories under `operators/<operator>/<role>/` of the state directory (an operator
not meant for API-only clusters skips those); `down` stops them first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from devfleet.agnhost_player import exec_documents
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_readiness import install_nodes, wait_ready
from devfleet.fleet_spec import FleetSpec
from devfleet.front_proxy import kwokctl_args, write_front_proxy_pki
from devfleet.kwok_pod_logs import pod_log_documents
from devfleet.kwok_stages import stage_documents
from devfleet.kwokctl import PORT_OPTIONS, Kwokctl, KwokctlError, check_binaries
from devfleet.operators.catalog import OPERATORS, resolve
from devfleet.operators.process import OperatorProcess, operator_binary, stop_operators_under
from devfleet.operators.spec import Operator, OperatorError
from devfleet.ports import allocate_ports
from devfleet.process_group import wait_gone

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
        self.operator_processes: dict[tuple[str, str], OperatorProcess] = {}
        """(operator, cluster role) -> the process this Fleet object started."""

    @property
    def operators_dir(self) -> Path:
        """Work directories (config, certificates, log, pid) of the operators."""
        return self.dir / "operators"

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
        operators: Sequence[str] | None = None,
        kubelet_exec: bool = False,
        manager_address: str | None = None,
        apiserver_sans: Mapping[str, Sequence[str]] | None = None,
    ) -> RunningFleet:
        """Start the fleet; clusters named in `api_only` run lite even in a full fleet.

        `manager_address` (a non-loopback address of this machine) opens the manager's
        apiserver there too, in its certificate and as its `kubernetes` endpoint, so the pods
        of a real node (devfleet.real_node) reach it; by default everything stays on loopback.

        `operators` (catalog names, plus what they require) run against every cluster;
        default: every operator in a full fleet, none in a lite one. `kubelet_exec` lets
        `kubectl exec` into pods run on this machine as upstream's agnhost image would
        answer (devfleet.agnhost_player) — for a fleet serving only a local test suite.
        `apiserver_sans` (role -> names and addresses) adds Subject Alternative Names to a
        cluster's serving certificate, for clients that reach it under another name
        (devfleet.kind_names).
        """
        check_binaries()
        if operators is None:
            operators = () if lite else tuple(OPERATORS)
        try:
            wanted = resolve(operators)
            for operator in wanted:
                operator_binary(operator)
        except OperatorError as exc:
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
        stages_of = {
            role: [
                *stages,
                *(exec_documents(self._kubeconfig_path(role), self.dir) if kubelet_exec else []),
            ]
            for role in roles
        }
        mode = "lite: etcd + apiserver" if lite else "full: etcd, apiserver, controller-manager, "
        mode += "" if lite else "scheduler, kwok"
        progress(f"fleet {self.name!r}: starting {len(roles)} clusters ({mode})")
        try:
            self._create_clusters(
                names,
                lite_roles=lite_roles,
                stages=stages_of,
                progress=progress,
                started=started,
                manager_address=manager_address,
                apiserver_sans=apiserver_sans or {},
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
                operators=wanted,
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
        stages: dict[str, list[str]],
        progress: Progress,
        started: float,
        manager_address: str | None = None,
        apiserver_sans: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        ports = allocate_ports(len(PORT_OPTIONS) * len(names))
        # Every apiserver fronts aggregated APIs (the hub's visibility API) as in a cluster.
        front_proxy = kwokctl_args(write_front_proxy_pki(self.dir / "front-proxy"))
        procs = {}
        for index, (role, name) in enumerate(names.items()):
            mine = ports[index * len(PORT_OPTIONS) : (index + 1) * len(PORT_OPTIONS)]
            lite = role in lite_roles
            exposed = manager_address if index == 0 else None
            pki = self.kwokctl.workdir / "clusters" / name / "pki"
            procs[role] = self.kwokctl.start_create(
                name,
                lite=lite,
                ports=mine,
                stages=[] if lite else stages[role],
                extra_args=[*front_proxy, *_exposed_apiserver_args(exposed, pki)],
                cert_sans=[
                    *([exposed] if exposed else []),
                    *(apiserver_sans or {}).get(role, ()),
                ],
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

    def _kubeconfig_path(self, role: str) -> Path:
        return self.dir / "kubeconfigs" / f"{role}.kubeconfig"

    def _write_kubeconfigs(self, names: dict[str, str]) -> dict[str, str]:
        (self.dir / "kubeconfigs").mkdir(exist_ok=True)
        paths = {}
        for role, name in names.items():
            path = self._kubeconfig_path(role)
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
        operators: Sequence[Operator] = (),
    ) -> None:
        specs = {cluster.name: cluster for cluster in spec.clusters}

        def prepare(member: ClusterAccess) -> str:
            cluster_spec = specs[member.name]
            lite = member.name in lite_roles
            if not lite:
                install_nodes(member, cluster_spec)
            # Started before the wait for nodes, ready (webhooks checked) after it.
            processes = [
                self._start_operator(operator, member)
                for operator in operators
                if operator.on_api_only or not lite
            ]
            wait_ready(member, cluster_spec, lite=lite, timeout=180)
            line = f"  [{time.monotonic() - started:5.1f}s] {member.name}: ready"
            for process in processes:
                try:
                    seconds = process.wait_ready()
                except OperatorError as exc:
                    raise FleetError(f"{member.name}: {exc}") from exc
                line += f"\n      {process.operator.title}: pid {process.pid}, ready in "
                line += f"{seconds:.1f}s (log {process.log_path})"
            return line

        with ThreadPoolExecutor(max_workers=len(fleet.all)) as pool:
            for line in pool.map(prepare, fleet.all):
                progress(line)

    def _start_operator(self, operator: Operator, member: ClusterAccess) -> OperatorProcess:
        process = OperatorProcess(
            operator,
            member.kubeconfig,
            self.operators_dir / operator.name / member.name,
            label=member.name,
        )
        self.operator_processes[(operator.name, member.name)] = process
        try:
            return process.start()
        except OperatorError as exc:
            raise FleetError(f"{member.name}: {exc}") from exc

    def operator(self, name: str, role: str) -> OperatorProcess:
        """The process of operator `name` on cluster `role` that this object started."""
        try:
            return self.operator_processes[(name, role)]
        except KeyError:
            raise FleetError(f"operator {name!r} does not run on {role!r} here") from None

    # -- down -------------------------------------------------------------------------
    def down(self, progress: Progress = print) -> list[str]:
        """Delete every cluster and leave no process, port or file behind; return leftovers."""
        record = self.record()
        ports = [urlparse(s).port for s in (record.servers.values() if record else ())]
        names = list(record.clusters.values()) if record else []
        # The operators first: they would only log errors while clusters go away.
        stop_operators_under(self.operators_dir)
        for process in self.operator_processes.values():  # reap the ones this process started
            process.stop(grace=1.0, unregister=False)
        self.operator_processes.clear()
        with contextlib.suppress(KwokctlError):  # a broken work dir still gets cleaned below
            names = sorted(set(names) | set(self.kwokctl.clusters()))
        with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
            for name, error in zip(names, pool.map(self._delete_quietly, names), strict=True):
                progress(f"  {name}: {'deleted' if error is None else 'delete failed: ' + error}")
        killed = kill_processes_under(self.dir)
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


def _exposed_apiserver_args(address: str | None, pki: Path) -> list[str]:
    """kube-apiserver flags that listen on every address (after the loopback default), name
    `address` as the `kubernetes` Service's endpoint (endpoints may not be loopback) and
    present kwokctl's admin certificate to kubelets (`kubectl logs` of a real node's pods)."""
    if address is None:
        return []
    pairs = [
        "kube-apiserver=bind-address=0.0.0.0",
        f"kube-apiserver=advertise-address={address}",
        f"kube-apiserver=kubelet-client-certificate={pki / 'admin.crt'}",
        f"kube-apiserver=kubelet-client-key={pki / 'admin.key'}",
        # kwok nodes have no address and a real node's name resolves nowhere: its InternalIP.
        "kube-apiserver=kubelet-preferred-address-types=InternalIP,Hostname",
    ]
    return [arg for pair in pairs for arg in ("--extra-args", pair)]


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


def kill_processes_under(directory: Path) -> list[str]:
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
    wait_gone([pid for pid, _ in found], timeout=10)
    for pid, _ in found:
        _signal(pid, signal.SIGKILL)
    wait_gone([pid for pid, _ in found], timeout=5)  # a killed process frees ports on exit
    return [f"{name}[{pid}]" for pid, name in found]


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
