"""One leg of the benchmark: a fresh lite fleet, one manager kind, the phases, the figures.

fleetq's leg runs `fleetq hub` (capacity-aware dispatcher) on the manager and a `fleetq
agent` on every worker; upstream's leg runs Kueue's `kueue` (devfleet.toolchain's
KUEUE_VERSION) on the manager (MultiKueue, AllAtOnce dispatcher) and on every worker.
Both get the same client budget, the same queues (`queue_setup`), the same tuned
apiservers with a write audit log (`bench/scheduler/tuned_cluster`), the same manager
identity on the workers (`worker_identity`) and the same driver (`dispatch_driver`).
Lite workers have no scheduler or kubelets: their nodes are plain objects, marked Ready
once, so an agent's capacity report shows them free, and no pod ever starts.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.multikueue.apiserver_requests import per_workload, request_counts
from bench.multikueue.dispatch_driver import Phase, PhaseResult, run_phase
from bench.multikueue.fleetq_processes import FleetqProcess, start_agent, start_hub, wait_ready
from bench.multikueue.machine_load import MachineLoad
from bench.multikueue.queue_setup import QueueSetup, apply_manifests
from bench.multikueue.remote_writes import count_remote_writes
from bench.multikueue.worker_identity import USERNAME, mint_manager_kubeconfig
from bench.scheduler.audit_writes import AUDIT_POLICY
from bench.scheduler.measured_process import cpu_seconds, peak_rss_kib
from bench.scheduler.tuned_cluster import ApiserverTuning, TunedKwokctl
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_readiness import install_nodes
from devfleet.fleet import Fleet
from devfleet.fleet_spec import ClusterSpec, FleetSpec, NodeGroup
from devfleet.upstream_kueue import (
    ALL_AT_ONCE,
    UpstreamKueue,
    UpstreamKueueOptions,
    install_crd_files,
    kubectl,
)

ROOT = Path(__file__).resolve().parents[2]
HUB_CRDS = ROOT / "charts" / "fleetq-hub" / "crds"
WORKER_CRDS = ROOT / "charts" / "fleetq-worker" / "crds"
Progress = Callable[[str], None]


class ManagerKind(enum.StrEnum):
    FLEETQ = "fleetq"
    UPSTREAM = "upstream"
    UPSTREAM_BUDGET = "upstream-budget"
    """Upstream whose manager's worker clients get the same budget as fleetq's (the
    `kueue-worker-budget` build): upstream at its best, not at its default."""


@dataclass(frozen=True, slots=True)
class LegSettings:
    workers: int
    phases: tuple[Phase, ...]
    qps: float
    burst: int
    timeout: float
    """Seconds to wait for stragglers after a phase's last create."""
    settle: float
    """Seconds after a phase before its write window closes (late clean-up writes)."""
    workdir: Path
    nodes_per_worker: int = 4
    log_level: str = "warning"
    """Log level of fleetq's hub and agents."""


def bench_spec(workers: int, nodes: int) -> FleetSpec:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    group = NodeGroup("cpu", nodes, capacity, {"fleetq.dev/node-pool": "cpu"})
    manager = ClusterSpec("manager", (NodeGroup("system", 1, capacity),))
    return FleetSpec(
        manager, tuple(ClusterSpec(f"worker-{i + 1}", (group,)) for i in range(workers))
    )


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def mark_nodes_ready(member: ClusterAccess, spec: ClusterSpec) -> None:
    """Create the worker's nodes and mark them Ready, without the not-ready taint (nothing
    on a lite cluster would lift it; an agent rightly counts a tainted node as unusable, and
    the capacity-aware dispatcher then falls back to trying workers in turn)."""
    from kubernetes import client

    install_nodes(member, spec)
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "BenchmarkNode",
        "message": "set by the benchmark",
        "lastHeartbeatTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with member.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for node in core.list_node().items:
            core.patch_node_status(node.metadata.name, {"status": {"conditions": [ready]}})
            taints = [
                {"key": t.key, "value": t.value, "effect": t.effect}
                for t in node.spec.taints or ()
                if t.key != NOT_READY_TAINT
            ]
            core.patch_node(node.metadata.name, {"spec": {"taints": taints or None}})


def wait_check_active(kubeconfig: Path, name: str, timeout: float = 90.0) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        raw = kubectl(kubeconfig, "get", "admissionchecks.kueue.x-k8s.io", name, "-o", "json")
        conditions = (json.loads(raw).get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions):
            return time.monotonic() - began
        time.sleep(0.5)
    raise RuntimeError(f"AdmissionCheck {name} not Active after {timeout:.0f}s")


class _Process:
    """CPU and memory of one manager-side or worker-side process, whichever kind."""

    def __init__(self, role: str, pid: int) -> None:
        self.role = role
        self.pid = pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid) or 0.0

    def peak_rss_mib(self) -> float:
        return (peak_rss_kib(self.pid) or 0) / 1024


def _start_fleetq(
    fleet: RunningFleet, settings: LegSettings, stack: ExitStack
) -> tuple[_Process, list[_Process]]:
    install_crd_files(fleet.manager.kubeconfig, HUB_CRDS)
    agents: list[FleetqProcess] = []
    for worker in fleet.workers:
        install_crd_files(worker.kubeconfig, WORKER_CRDS)
        agent = start_agent(
            worker.kubeconfig,
            settings.workdir,
            worker.name,
            qps=settings.qps,
            burst=settings.burst,
            log_level=settings.log_level,
        )
        stack.callback(agent.process.stop)
        agents.append(agent)
    for agent in agents:
        wait_ready(agent)
    hub = start_hub(
        fleet.manager.kubeconfig,
        settings.workdir,
        qps=settings.qps,
        burst=settings.burst,
        log_level=settings.log_level,
    )
    stack.callback(hub.process.stop)
    wait_ready(hub)
    return _Process("hub", hub.process.pid), [_Process(a.role, a.process.pid) for a in agents]


def _start_upstream(
    fleet: RunningFleet, settings: LegSettings, stack: ExitStack, *, worker_budget: bool = False
) -> tuple[_Process, list[_Process]]:
    workers: list[UpstreamKueue] = []
    for worker in fleet.workers:
        kueue = UpstreamKueue(
            worker.kubeconfig,
            options=UpstreamKueueOptions(qps=settings.qps, burst=settings.burst, log_verbosity=0),
            log_path=settings.workdir / f"upstream-{worker.name}.log",
        )
        stack.callback(kueue.stop)
        kueue.start()
        workers.append(kueue)
    for kueue in workers:
        kueue.wait_ready()
    options = UpstreamKueueOptions(
        qps=settings.qps,
        burst=settings.burst,
        dispatcher_name=ALL_AT_ONCE,
        log_verbosity=0,
        worker_client_budget=worker_budget,
    )
    manager = UpstreamKueue(
        fleet.manager.kubeconfig,
        options=options,
        log_path=settings.workdir / "upstream-manager.log",
    )
    stack.callback(manager.stop)
    manager.start()
    manager.wait_ready()
    return _Process("kueue manager", manager.pid), [
        _Process(f"kueue {w.name}", k.pid) for w, k in zip(fleet.workers, workers, strict=True)
    ]


def run_leg(kind: ManagerKind, settings: LegSettings, progress: Progress = print) -> dict[str, Any]:
    """Run every phase against one manager kind on a fleet of its own; return the figures."""
    settings.workdir.mkdir(parents=True, exist_ok=True)
    policy = settings.workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    fleet = Fleet(f"mkbench-{kind}-{os.getpid()}")
    fleet.kwokctl = TunedKwokctl(fleet.kwokctl.workdir, tuning=ApiserverTuning(audit_policy=policy))
    spec = bench_spec(settings.workers, settings.nodes_per_worker)
    with ExitStack() as stack:
        running = fleet.up(spec, lite=True, progress=progress)
        stack.callback(lambda: fleet.down(progress=lambda _: None))
        stack.callback(lambda: _keep_audit_logs(fleet, settings.workdir / "audit"))
        setup = QueueSetup(
            "bench", namespace="bench", workers=tuple(w.name for w in running.workers)
        )
        for member, cluster in zip(running.workers, spec.workers, strict=True):
            mark_nodes_ready(member, cluster)
        if kind is ManagerKind.FLEETQ:
            manager, worker_side = _start_fleetq(running, settings, stack)
        else:
            budget = kind is ManagerKind.UPSTREAM_BUDGET
            manager, worker_side = _start_upstream(running, settings, stack, worker_budget=budget)
        for member in running.workers:
            apply_manifests(member.kubeconfig, setup.worker_manifests())
        kubeconfigs = {w.name: mint_manager_kubeconfig(w.kubeconfig) for w in running.workers}
        apply_manifests(running.manager.kubeconfig, setup.manager_manifests(kubeconfigs))
        active_s = wait_check_active(running.manager.kubeconfig, setup.check)
        progress(f"  {kind}: processes ready, MultiKueue check Active after {active_s:.1f}s")
        worker_paths = [w.kubeconfig for w in running.workers]
        warmup = Phase("warmup", 0, 3)
        asyncio.run(run_phase(running.manager.kubeconfig, worker_paths, setup, warmup, timeout=60))
        time.sleep(settings.settle)
        load = MachineLoad(fleet, [running.manager.name, *(w.name for w in running.workers)])
        phases = []
        for phase in settings.phases:
            cpu_before = manager.cpu()
            workers_before = sum(p.cpu() for p in worker_side)
            members = [running.manager, *running.workers]
            requests_before = {m.name: request_counts(m) for m in members}
            load_before = load.mark()
            result = asyncio.run(
                run_phase(
                    running.manager.kubeconfig,
                    worker_paths,
                    setup,
                    phase,
                    timeout=settings.timeout,
                )
            )
            load_after = load.mark()  # the phase only, not the settling after it
            time.sleep(settings.settle)
            figures = _phase_figures(
                result,
                fleet,
                settle=settings.settle,
                manager_cpu_s=manager.cpu() - cpu_before,
                worker_side_cpu_s=sum(p.cpu() for p in worker_side) - workers_before,
            )
            figures.update(MachineLoad.between(load_before, load_after))
            requests_after = {m.name: request_counts(m) for m in members}
            figures["apiserver_requests_per_workload"] = per_workload(
                requests_before, requests_after, result.dispatched
            )
            phases.append(figures)
            progress(f"  {kind}: {json.dumps(phases[-1])}")
        figures = {
            "manager": kind.value,
            "dispatcher": "fleetq.dev/capacity-aware"
            if kind is ManagerKind.FLEETQ
            else ALL_AT_ONCE,
            "workers": settings.workers,
            "manager_peak_rss_mib": round(manager.peak_rss_mib(), 1),
            "manager_cpu_total_s": round(manager.cpu(), 2),
            "worker_side_peak_rss_mib": [round(p.peak_rss_mib(), 1) for p in worker_side],
            "phases": phases,
        }
    return figures


def _keep_audit_logs(fleet: Fleet, into: Path) -> None:
    """Copy the apiservers' audit logs out of the fleet before it is deleted: with
    `--workdir` they stay for tracing a run write by write."""
    for path in fleet.dir.rglob("audit*.log*"):
        if path.is_file():
            target = into / path.relative_to(fleet.dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _phase_figures(
    result: PhaseResult,
    fleet: Fleet,
    *,
    settle: float,
    manager_cpu_s: float,
    worker_side_cpu_s: float,
) -> dict[str, Any]:
    import datetime as dt

    audit = sorted(p for p in fleet.dir.rglob("audit*.log*") if p.is_file())
    tally = count_remote_writes(
        audit,
        username=USERNAME,
        since=result.started_at,
        until=result.ended_at + dt.timedelta(seconds=settle),
    )
    figures = result.summary()
    dispatched = max(1, result.dispatched)
    figures.update(
        {
            "remote_writes": tally.total,
            "remote_writes_per_workload": round(tally.per_job(result.dispatched_names), 2),
            "remote_writes_by_kind": tally.by_kind,
            "manager_cpu_s": round(manager_cpu_s, 2),
            "manager_cpu_ms_per_workload": round(1000 * manager_cpu_s / dispatched, 2),
            "worker_side_cpu_s": round(worker_side_cpu_s, 2),
        }
    )
    return figures
