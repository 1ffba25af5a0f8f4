"""`fleetq dev demo` (what `make demo` runs): fleetq spreading GPU and CPU jobs over a fleet.

Offline and from scratch: build the tools (cached), start the fleet "demo" (a manager and
two workers, real control planes, kwok GPU and CPU nodes), install the helm charts, set up
the queues, join the workers from clusters.example.yaml, start the hub and the agents with
the charts' identities, submit a mix of jobs, show them spread and complete (a live table),
summarise where each ran and for how long, and tear everything down — or, with `keep`,
leave it all running and say how to use it and stop it.

`short` runs a smaller, quicker mix (the e2e test uses it); `summary_file` receives the
summary as JSON (jobs, placement, times, and what teardown left behind).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rich.console import Console
from rich.live import Live
from rich.table import Table

from devfleet.chart_install import install_fleet_charts
from devfleet.cluster_access import RunningFleet
from devfleet.demo_dashboard import create_viewer, dashboard_lines
from devfleet.demo_jobs import DemoJob, JobApi, job_mix, submit_job
from devfleet.demo_join import FLEET_FILE, join_demo_workers
from devfleet.demo_processes import DemoProcesses, start_processes, wait_until_serving
from devfleet.demo_queues import set_up_queues
from devfleet.demo_report import live_table, summary_document, summary_table, worker_table
from devfleet.demo_watch import FleetObserver, JobRecord, JobState
from devfleet.fleet import Fleet
from devfleet.fleet_spec import load_fleet_spec
from devfleet.operators.catalog import OPERATORS, tools_of
from devfleet.process_group import is_alive
from devfleet.toolchain import binary_path, build_tools

Say = Callable[[str], None]
DEMO_TOOLS = ("kubernetes", "etcd", "kwok", "helm", *tools_of(OPERATORS.values()))
POLL_SECONDS = 0.5
SHORT_JOBS_TIMEOUT_SECONDS = 150.0
FULL_JOBS_TIMEOUT_SECONDS = 300.0
KEEP_TOKEN_LIFETIME_SECONDS = 7 * 24 * 3600
RUN_TOKEN_LIFETIME_SECONDS = 3600
HUB_CONFIGURATION = {
    "integrations": {
        "frameworks": [
            "batch/job",
            "jobset.x-k8s.io/jobset",
            "ray.io/rayjob",
            "ray.io/raycluster",
            "kubeflow.org/pytorchjob",
        ]
    },
    "clientConnection": {"qps": 50, "burst": 100},
    "multiKueue": {"dispatcherName": "fleetq.dev/capacity-aware", "gcInterval": "10s"},
}
"""The Configuration the hub chart writes (the chart derives namespace, ports, certs). The
agents' Configuration lists no frameworks, so they manage every kind (Jobs, JobSets, RayJobs)."""


@dataclass(frozen=True, slots=True)
class DemoOptions:
    keep: bool = False
    short: bool = False
    summary_file: Path | None = None
    fleet_name: str = "demo"


def node_table(fleet: RunningFleet) -> Table:
    """One row per node pool of each cluster: nodes, CPU, memory, GPUs per node."""
    from kubernetes import client

    table = Table(title="the fleet (kwok fake nodes, real kube-scheduler)")
    for column in ("cluster", "pool", "nodes", "cpu", "memory", "GPUs", "GPU model"):
        table.add_column(column)
    for member in fleet.all:
        with member.api_client() as api_client:
            nodes = client.CoreV1Api(api_client).list_node().items
        pools: dict[str, list[Any]] = {}
        for node in nodes:
            pool = (node.metadata.labels or {}).get("fleetq.dev/node-pool", "-")
            pools.setdefault(pool, []).append(node)
        for pool, members in sorted(pools.items()):
            allocatable = members[0].status.allocatable or {}
            labels = members[0].metadata.labels or {}
            table.add_row(
                member.name,
                pool,
                str(len(members)),
                allocatable.get("cpu", "-"),
                allocatable.get("memory", "-"),
                allocatable.get("nvidia.com/gpu", "0"),
                labels.get("nvidia.com/gpu.product", "-"),
            )
    return table


def demo_console() -> Console:
    """The terminal's console; in a log or a pipe, wide enough that tables stay whole."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_demo(options: DemoOptions, say: Say) -> int:
    """The demo; SIGTERM, like Ctrl-C, still tears down (or keeps, with `keep`) the fleet."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _run(options, say)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(options: DemoOptions, say: Say) -> int:
    console = demo_console()
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str, title: str) -> None:
        phases[name] = round(time.monotonic() - started, 1)
        console.rule(f"[bold]{title}[/bold] [dim]({phases[name]:.0f}s)[/dim]")

    phase("tools", "1/7 tools (built from Go modules once, then cached)")
    build_tools(list(DEMO_TOOLS), progress=say)
    phase("fleet", f"2/7 fleet {options.fleet_name!r}: a manager and two workers")
    handle = Fleet(options.fleet_name)
    fleet = handle.up(load_fleet_spec().with_worker_count(2), lite=False, progress=say)
    workdir = handle.dir / "demo"
    summary: dict[str, Any] = {
        "fleet": options.fleet_name,
        "fleetDir": str(handle.dir),
        "clusters": {m.name: {"server": m.server} for m in fleet.all},
        "kept": options.keep,
    }
    processes: DemoProcesses | None = None
    succeeded = False
    try:
        console.print(node_table(fleet))
        phase("charts", "3/7 helm charts: fleetq-hub on the manager, fleetq-worker on workers")
        lifetime = KEEP_TOKEN_LIFETIME_SECONDS if options.keep else RUN_TOKEN_LIFETIME_SECONDS
        charts = install_fleet_charts(
            fleet,
            workdir / "charts",
            hub_values={"configuration": HUB_CONFIGURATION, "dashboard": {"enabled": True}},
            token_lifetime_seconds=lifetime,
            progress=say,
        )
        phase("queues", "4/7 queues: flavors per node pool, ClusterQueues, LocalQueues")
        set_up_queues(fleet, say)
        phase("join", f"5/7 fleetq join -f {FLEET_FILE.name}")
        join_demo_workers(fleet, say)
        phase("processes", "6/7 the hub and the agents, as the charts' ServiceAccounts")
        processes = start_processes(fleet, charts, workdir, say)
        create_viewer(fleet.manager)
        summary["processes"] = {
            p.label: {"pid": p.pid, "log": str(p.log_path)} for p in processes.all
        }
        summary["processPorts"] = processes.ports
        summary["dashboardUrl"] = processes.dashboard_url
        wait_until_serving(fleet, processes, say)
        jobs = job_mix(short=options.short)
        jobsets = sum(job.api is JobApi.JOBSET for job in jobs)
        pytorchjobs = sum(job.api is JobApi.PYTORCHJOB for job in jobs)
        rayjobs = sum(job.api is JobApi.RAYJOB for job in jobs)
        serving = sum(job.serving for job in jobs)
        phase(
            "jobs",
            f"7/7 {len(jobs)} jobs ({jobsets} a JobSet, {pytorchjobs} a PyTorchJob, "
            f"{rayjobs} a RayJob, {serving} an inference Deployment on worker-2) from team-a "
            "and team-b, the batch jobs submitted on the manager",
        )
        records, now = watch_jobs(fleet, jobs, console, say, short=options.short)
        console.print(summary_table(records.values(), now))
        console.print(worker_table(records.values(), [w.name for w in fleet.workers]))
        succeeded = all(r.state.succeeded for r in records.values())
        summary.update(summary_document(records.values(), now))
        say(
            f"{sum(r.state.succeeded for r in records.values())}/{len(records)} "
            f"jobs succeeded (the Deployment serving); demo ran {time.monotonic() - started:.0f}s"
        )
        if processes is not None:
            _check_logs(processes, say)
    finally:
        if options.keep:
            _print_keep_instructions(console, fleet, processes, workdir=workdir)
        else:
            summary["teardown"] = _tear_down(handle, fleet, processes, say)
        summary["phases"] = phases
        summary["seconds"] = round(time.monotonic() - started, 1)
        if options.summary_file is not None:
            options.summary_file.write_text(json.dumps(summary, indent=2))
    return 0 if succeeded else 1


def watch_jobs(
    fleet: RunningFleet, jobs: tuple[DemoJob, ...], console: Console, say: Say, *, short: bool
) -> tuple[dict[str, JobRecord], float]:
    """Submit the jobs on their schedule and follow them until all are done (or time out);
    the records and the seconds it took."""
    records = {job.key: JobRecord(job) for job in jobs}
    started = time.monotonic()
    timeout = SHORT_JOBS_TIMEOUT_SECONDS if short else FULL_JOBS_TIMEOUT_SECONDS
    observer = FleetObserver(fleet, records, started)
    live = Live(
        live_table(records.values(), 0.0),
        console=console,
        refresh_per_second=4,
        # Without a terminal there is nothing to redraw: state changes are printed instead.
        transient=not console.is_terminal,
    )
    with observer.opened(), fleet.manager.api_client() as api_client, live:
        while True:
            now = observer.now()
            for record in records.values():
                if record.submitted is None and record.job.submit_at <= now:
                    if record.job.cluster is None:
                        submit_job(api_client, record.job)
                    else:  # a Deployment, queued on its worker by the agent there
                        with fleet.cluster(record.job.cluster).api_client() as worker_client:
                            submit_job(worker_client, record.job)
                    record.submitted = observer.now()
                    record.state = JobState.SUBMITTED
                    if not console.is_terminal:
                        say(f"[{record.submitted:5.1f}s] submitted {record.job.key}")
            for line in observer.observe():
                if not console.is_terminal:
                    say(line)
            live.update(live_table(records.values(), observer.now()))
            if all(record.state.done for record in records.values()):
                break
            if observer.now() > timeout:
                say(f"[red]jobs not done after {timeout:.0f}s; the summary shows where each is")
                break
            time.sleep(POLL_SECONDS)
    return records, observer.now()


def _check_logs(processes: DemoProcesses, say: Say) -> None:
    """Point out any request the charts' RBAC refused (there should be none)."""
    for process in processes.all:
        text = process.log_path.read_text(errors="replace")
        refused = [line for line in text.splitlines() if "HTTP 403" in line or "forbidden" in line]
        if refused:
            say(f"[yellow]{process.label}: {len(refused)} request(s) refused by RBAC[/yellow]")
            say(f"  first: {refused[0][:300]}")
        else:
            say(f"  {process.label}: no request refused by its chart's RBAC")


def _tear_down(
    handle: Fleet, fleet: RunningFleet, processes: DemoProcesses | None, say: Say
) -> dict[str, Any]:
    """Stop the processes, then the clusters; report anything left behind."""
    say("tearing down: hub and agents, then the clusters")
    unclean = processes.stop() if processes is not None else []
    leftovers = handle.down(progress=say)
    pids = [p.pid for p in (processes.all if processes else []) if p.pid is not None]
    alive = [pid for pid in pids if is_alive(pid)]
    ports = [urlparse(m.server).port for m in fleet.all]
    if not leftovers and not alive:
        say("nothing left running: no fleet process, no open port, state folder removed")
    return {
        "uncleanExits": unclean,
        "leftoverPorts": leftovers,
        "alivePids": alive,
        "clusterPorts": [p for p in ports if p],
        "fleetDirRemoved": not handle.dir.exists(),
    }


def _print_keep_instructions(
    console: Console, fleet: RunningFleet, processes: DemoProcesses | None, workdir: Path
) -> None:
    kubectl = binary_path("kubectl")
    lines = [
        "[bold]KEEP: the demo fleet stays up.[/bold]",
        *(f"  {m.name:<9} kubeconfig {m.kubeconfig}" for m in fleet.all),
        f"  export KUBECONFIG={fleet.manager.kubeconfig}",
        "  fleetq status                          # workers, capacity, queues",
        "  fleetq list workloads -A               # where each job went",
        "  fleetq describe workload NAME -n team-a",
        f"  {kubectl} get jobs,jobsets,pytorchjobs,workloads -A",
        "  new Jobs or JobSets: label kueue.x-k8s.io/queue-name=user-queue in team-a or team-b,",
        "  created suspended with spec.managedBy=kueue.x-k8s.io/multikueue (the hub runs",
        "  without webhooks here); see devfleet/demo_jobs.py",
    ]
    if processes is not None:
        lines += [f"  {p.label} (pid {p.pid}): log {p.log_path}" for p in processes.all]
    lines += [
        f"  identities, Configurations, logs: {workdir}",
        f"  operators (JobSet's and the others, one per cluster): logs under "
        f"{workdir.parent / 'operators'}",
        f"  stop everything: fleetq dev down --name {fleet.name}",
    ]
    if processes is not None and processes.dashboard_url:
        lines += dashboard_lines(processes.dashboard_url, kubectl, fleet.manager.kubeconfig)
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
