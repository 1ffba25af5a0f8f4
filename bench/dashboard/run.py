"""The dashboard's cost on the hub: CPU, memory, bytes per stream and update latency.

`python -m bench.dashboard` (or `make bench-dashboard`) starts two fresh lite clusters
(etcd + kube-apiserver each, tuned as the other benchmarks' are), the real `fleetq hub`
with `--dashboard-port` on the manager, 10,000 Workloads (4,000 admitted, the rest
pending) and 20 MultiKueueClusters whose connections all reach the one worker apiserver,
where 20 WorkerCapacity reports stand for 20 workers (bench/README.md says exactly what
is real and what is modelled). Then two windows of the same changes (`changes.py`): the
first with no dashboard stream open, the second with every view's stream open
(`--viewers` of each, each as its own ServiceAccount). Per window: the hub's CPU seconds,
its peak RSS, the machine's load; per stream: bytes and events received, and each
change's latency to the stream that shows it. Figures go to
`bench/results/dashboard-<time>.json` and `dashboard-latest.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from bench.dashboard.changes import ChangePlan, make_changes
from bench.dashboard.fleet_objects import DashboardFleet
from bench.dashboard.stream_client import DashboardStream
from bench.dashboard.workload_activity import WorkloadActivity
from bench.multikueue.dispatch_leg import HUB_CRDS, WORKER_CRDS, bench_spec
from bench.multikueue.fleetq_processes import FleetqProcess, start_hub, wait_ready
from bench.multikueue.machine_load import MachineLoad
from bench.multikueue.queue_setup import apply_manifests
from bench.multikueue.worker_identity import mint_manager_kubeconfig
from bench.scheduler.measured_process import cpu_seconds, peak_rss_kib
from bench.scheduler.tuned_cluster import ApiserverTuning, TunedKwokctl
from core.api.registry import kind_info
from core.engine.nearest_rank import nearest_rank
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, TransportError
from devfleet.fleet import Fleet
from devfleet.ports import allocate_ports
from devfleet.upstream_kueue import install_crd_files, kubectl

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
VIEWS = ("fleet", "queues", "workloads", "flavors", "workload")
DRIVER_QPS = 5000.0
CREATES_IN_FLIGHT = 32
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Settings:
    fleet: DashboardFleet = field(default_factory=DashboardFleet)
    plan: ChangePlan = field(default_factory=ChangePlan)
    viewers: int = 1
    """Streams of each view (each a ServiceAccount of its own)."""
    qps: float = 500.0
    burst: int = 1000
    settle_s: float = 15.0
    """Seconds without any Workload change before the first window."""
    setup_timeout_s: float = 900.0
    log_level: str = "warning"
    workdir: Path = Path("/tmp/fleetq-dashboard-bench")

    @property
    def streams(self) -> int:
        return self.viewers * len(VIEWS)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def run(settings: Settings, progress: Progress = print) -> dict[str, Any]:
    """Start everything, measure both windows, tear everything down; return the figures."""
    settings.workdir.mkdir(parents=True, exist_ok=True)
    objects = settings.fleet
    fleet = Fleet(f"dashbench-{os.getpid()}")
    fleet.kwokctl = TunedKwokctl(fleet.kwokctl.workdir, tuning=ApiserverTuning())
    with ExitStack() as stack:
        running = fleet.up(bench_spec(1, 1), lite=True, progress=progress)
        stack.callback(lambda: fleet.down(progress=lambda _: None))
        manager, worker = running.manager, running.workers[0]
        install_crd_files(manager.kubeconfig, HUB_CRDS)
        install_crd_files(worker.kubeconfig, WORKER_CRDS)
        worker_kubeconfig = mint_manager_kubeconfig(worker.kubeconfig)
        apply_manifests(worker.kubeconfig, [objects.report(n) for n in objects.worker_names])
        (port,) = allocate_ports(1)
        hub = start_hub(
            manager.kubeconfig,
            settings.workdir,
            qps=settings.qps,
            burst=settings.burst,
            log_level=settings.log_level,
            extra_args=("--dashboard-port", str(port)),
        )
        stack.callback(hub.process.stop)
        wait_ready(hub)
        _wait_http(f"http://127.0.0.1:{port}/healthz", 60)
        apply_manifests(
            manager.kubeconfig, objects.manager_manifests(worker_kubeconfig, settings.streams)
        )
        tokens = [
            kubectl(
                manager.kubeconfig,
                *("create", "token", objects.viewer(i), "-n", objects.namespace),
                "--duration=4h",
            ).strip()
            for i in range(settings.streams)
        ]
        load = MachineLoad(fleet, [manager.name, worker.name])
        progress(f"hub pid {hub.process.pid}, dashboard on :{port}; creating the Workloads")
        figures = asyncio.run(
            _measure(
                settings, hub, port, tokens, manager.kubeconfig, worker.kubeconfig, load, progress
            )
        )
        figures["hub_exit"] = hub.process.stop().exit_code
    return figures


async def _measure(
    settings: Settings,
    hub: FleetqProcess,
    port: int,
    tokens: list[str],
    manager_kubeconfig: Path,
    worker_kubeconfig: Path,
    load: MachineLoad,
    progress: Progress,
) -> dict[str, Any]:
    objects = settings.fleet
    manager = await KubeClient.from_kubeconfig(
        manager_kubeconfig, qps=DRIVER_QPS, burst=int(DRIVER_QPS)
    )
    worker = await KubeClient.from_kubeconfig(
        worker_kubeconfig, qps=DRIVER_QPS, burst=int(DRIVER_QPS)
    )
    pid = hub.process.pid
    try:
        for name in objects.worker_names:
            await worker.patch(
                kind_info("WorkerCapacity"), name, objects.report_status(0), subresource="status"
            )
        began = time.monotonic()
        await _create_workloads(manager, objects)
        created_s = time.monotonic() - began
        progress(
            f"  {objects.workloads} Workloads created in {created_s:.0f}s; waiting for the hub"
        )
        await _wait_settled(manager, objects, settings.setup_timeout_s)
        settled_s = time.monotonic() - began
        progress(
            f"  settled after {settled_s:.0f}s (admitted and pending as planned, workers Active)"
        )
        activity = WorkloadActivity(manager, objects.namespace)
        await activity.start()
        quiet_after_s = await activity.wait_quiet(settings.settle_s, timeout=300.0)
        progress(f"  no Workload changed for {settings.settle_s:.0f}s, {quiet_after_s:.0f}s later")
        plan = settings.plan
        windows: dict[str, dict[str, Any]] = {}

        def changes(label: str, round_index: int) -> Callable[[list[DashboardStream]], Any]:
            return lambda s: make_changes(manager, worker, objects, plan, label, round_index, s)

        def quiet(_streams: list[DashboardStream]) -> Any:
            return asyncio.sleep(plan.window_s)

        windows["quiet, no stream"] = await _window(hub, load, activity, [], quiet)
        progress(f"  quiet, no stream: {json.dumps(windows['quiet, no stream'])}")
        windows["changes, no stream"] = await _window(hub, load, activity, [], changes("none", 0))
        progress(f"  changes, no stream: {json.dumps(windows['changes, no stream'])}")
        per_stream: dict[str, list[dict[str, Any]]] = {}
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{port}/api/stream"
            streams = []
            for index, token in enumerate(tokens):
                view = VIEWS[index % len(VIEWS)]
                stream = DashboardStream(session, url, token, view)
                query = {"view": view}
                if view == "workload":
                    query.update(namespace=objects.namespace, name="wl-00000")
                stream.start(query)
                streams.append(stream)
            opened_began = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*(s.opened.wait() for s in streams)), timeout=120)
            opened_s = time.monotonic() - opened_began
            failed = [f"{s.stats.view}: {s.stats.ended}" for s in streams if s.stats.ended]
            if failed:
                raise RuntimeError(f"streams did not open: {failed}")
            await asyncio.sleep(3.0)
            for name, make in (("quiet, streams", quiet), ("changes, streams", changes("s", 1))):
                for stream in streams:
                    stream.stats.reset()
                windows[name] = await _window(hub, load, activity, streams, make)
                per_stream[name] = [_stream_figures(s, plan) for s in streams]
                progress(f"  {name}: {json.dumps(windows[name])}")
            windows["changes, streams"]["first_events_s"] = round(opened_s, 2)
            for stream in streams:
                await stream.close()
        await activity.stop()
    finally:
        await manager.close()
        await worker.close()
    latency = {
        view: _latency([s for s in streams if s.stats.view == view], settings.plan.changes)
        for view in ("workloads", "fleet")
    }
    return {
        "at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "settings": _settings_document(settings),
        "setup": {
            "create_s": round(created_s, 1),
            "settled_s": round(settled_s, 1),
            "quiet_after_s": round(quiet_after_s, 1),
        },
        "windows": windows,
        "latency": latency,
        "streams": per_stream,
        "hub_rss_mib_end": _rss_mib(pid),
        "hub_peak_rss_mib_end": round((peak_rss_kib(pid) or 0) / 1024, 1),
    }


async def _window(
    hub: FleetqProcess,
    load: MachineLoad,
    activity: WorkloadActivity,
    streams: list[DashboardStream],
    changes: Callable[[list[DashboardStream]], Any],
) -> dict[str, Any]:
    pid = hub.process.pid
    load_before = os.getloadavg()
    mark = load.mark()
    cpu_before = cpu_seconds(pid) or 0.0
    changes_before = activity.changes
    began = time.monotonic()
    await changes(streams)
    wall = time.monotonic() - began
    cpu = (cpu_seconds(pid) or 0.0) - cpu_before
    figures: dict[str, Any] = {
        "wall_s": round(wall, 1),
        "hub_cpu_s": round(cpu, 2),
        "hub_cpu_cores": round(cpu / wall, 3),
        "hub_peak_rss_mib": round((peak_rss_kib(pid) or 0) / 1024, 1),
        "hub_rss_mib": _rss_mib(pid),
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "bench_cpu_s": round(time.process_time(), 2),
        "workload_events": activity.changes - changes_before,
    }
    figures.update(MachineLoad.between(mark, load.mark()))
    return figures


def _stream_figures(stream: DashboardStream, plan: ChangePlan) -> dict[str, Any]:
    stats = stream.stats
    return {
        "view": stats.view,
        "bytes": stats.received,
        "bytes_per_s": round(stats.received / plan.window_s),
        "view_events": stats.view_events,
        "keepalives": stats.keepalives,
        "markers_seen": len(stats.seen),
        "ended": stats.ended,
    }


def _latency(streams: list[DashboardStream], changes: int) -> dict[str, Any]:
    values = [v for s in streams for v in s.stats.seen.values()]
    missed = sum(len(s.stats.awaited) for s in streams)
    p50, p99 = nearest_rank(values, 0.5), nearest_rank(values, 0.99)
    return {
        "changes": changes * len(streams),
        "seen": len(values),
        "missed": missed,
        "p50_s": None if p50 is None else round(p50, 3),
        "p99_s": None if p99 is None else round(p99, 3),
        "max_s": round(max(values), 3) if values else None,
    }


async def _create_workloads(client: KubeClient, objects: DashboardFleet) -> None:
    in_flight = asyncio.Semaphore(CREATES_IN_FLIGHT)
    resource = kind_info("Workload")

    async def create(index: int) -> None:
        body = objects.workload(f"wl-{index:05d}", index)
        async with in_flight:
            for attempt in range(5):
                try:
                    await client.create(resource, body, namespace=objects.namespace)
                    return
                except AlreadyExists:
                    return
                except TransportError:
                    if attempt == 4:
                        raise
                    await asyncio.sleep(0.5 * (attempt + 1))

    async with asyncio.TaskGroup() as group:
        for index in range(objects.workloads):
            group.create_task(create(index))


async def _wait_settled(client: KubeClient, objects: DashboardFleet, timeout: float) -> None:
    """Until the ClusterQueue counts the planned admitted and pending Workloads and every
    MultiKueueCluster is Active."""
    deadline = time.monotonic() + timeout
    pending = objects.workloads - objects.admitted
    status: dict[str, Any] = {}
    active = 0
    while time.monotonic() < deadline:
        cq = await client.get(kind_info("ClusterQueue"), objects.cluster_queue)
        status = cq.get("status") or {}
        clusters = await client.list(kind_info("MultiKueueCluster"))
        active = sum(
            any(
                c.get("type") == "Active" and c.get("status") == "True"
                for c in (item.get("status") or {}).get("conditions") or ()
            )
            for item in clusters.items
        )
        if (
            status.get("admittedWorkloads") == objects.admitted
            and status.get("pendingWorkloads") == pending
            and active == objects.workers
        ):
            return
        await asyncio.sleep(2.0)
    raise RuntimeError(
        f"not settled after {timeout:.0f}s: ClusterQueue admitted "
        f"{status.get('admittedWorkloads')}, pending {status.get('pendingWorkloads')}; "
        f"{active}/{objects.workers} MultiKueueClusters Active"
    )


def _settings_document(settings: Settings) -> dict[str, Any]:
    document = asdict(settings)
    document["workdir"] = str(settings.workdir)
    return document


def table(figures: dict[str, Any]) -> str:
    """The README's tables for one run."""
    lines = [
        "| window | hub CPU (cores) | hub peak RSS MiB | machine busy | load avg (1 min) |",
        "|---|---|---|---|---|",
    ]
    for name, window in figures["windows"].items():
        lines.append(
            f"| {name} | {window['hub_cpu_cores']:.3f} | {window['hub_peak_rss_mib']:.0f} | "
            f"{window['machine_busy_cores']:.2f} of {window['machine_cores']} | "
            f"{window['load_average_before'][0]:.1f} → {window['load_average_after'][0]:.1f} |"
        )
    lines += [
        "",
        "| stream | KiB/s quiet | KiB/s changing | events quiet / changing | latency p50 / p99 s |",
        "|---|---|---|---|---|",
    ]
    quiet, changing = figures["streams"]["quiet, streams"], figures["streams"]["changes, streams"]
    for still, busy in zip(quiet, changing, strict=True):
        latency = figures["latency"].get(busy["view"])
        shown = (
            f"{latency['p50_s']} / {latency['p99_s']} ({latency['seen']}/{latency['changes']})"
            if latency
            else "-"
        )
        lines.append(
            f"| {busy['view']} | {still['bytes_per_s'] / 1024:.0f} | "
            f"{busy['bytes_per_s'] / 1024:.0f} | {still['view_events']} / {busy['view_events']} "
            f"| {shown} |"
        )
    return "\n".join(lines)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--admitted", type=int, default=4_000)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--viewers", type=int, default=1, help="streams of each view")
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.8, help="seconds between changes")
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--workdir", type=Path, default=Settings().workdir)
    parser.add_argument("--label", default="", help="a word for the results file name")
    parser.add_argument("--show", type=Path, help="print a saved result's table and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.show is not None:
        print(table(json.loads(args.show.read_text())))
        return 0
    # The bench's own watches and clients log at info; only the table belongs on stdout.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    settings = Settings(
        fleet=DashboardFleet(
            workloads=args.workloads, admitted=args.admitted, workers=args.workers
        ),
        plan=ChangePlan(changes=args.changes, interval_s=args.interval),
        viewers=args.viewers,
        log_level=args.log_level,
        workdir=args.workdir,
    )
    figures = run(settings, progress=lambda line: print(line, file=sys.stderr, flush=True))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    name = f"dashboard-{stamp}{'-' + args.label if args.label else ''}.json"
    text = json.dumps(figures, indent=2)
    (RESULTS / name).write_text(text)
    (RESULTS / "dashboard-latest.json").write_text(text)
    print(table(figures))
    print(f"\nfigures: {RESULTS / name}")
    return 0
