"""The demo's hub and agents: real `fleetq hub` / `fleetq agent` processes, each with
nothing but the token of its helm chart's ServiceAccount (devfleet.chart_install).

The hub reads the Configuration from the hub chart's ConfigMap, leads through its Lease in
kueue-system, connects to the workers with the kubeconfig Secrets `fleetq join` made, and
serves the fleet dashboard on a loopback port (`dashboard_url`; the chart, installed with
`dashboard.enabled`, lets it review tokens and access).
Each agent takes its Lease in the worker chart's namespace and reports its capacity under
the worker's name (the MultiKueueCluster's name). Every file the processes are given lives
under the fleet's state folder, so `fleetq dev down` finds and stops them too.
"""

from __future__ import annotations

import functools
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from devfleet.chart_install import AGENT_NAMESPACE, FleetCharts
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.conditions import is_true
from devfleet.fleet_process import FleetProcess
from devfleet.multikueue_fleet import CONFIG_API_VERSION, FLEETQ
from devfleet.polling import until
from devfleet.ports import allocate_ports

Progress = Callable[[str], None]
KUEUE = ("kueue.x-k8s.io", "v1beta2")
START_TIMEOUT_SECONDS = 120.0


@dataclass
class DemoProcesses:
    """The running hub and agents, with the ports they serve on."""

    hub: FleetProcess
    agents: dict[str, FleetProcess] = field(default_factory=dict)
    metrics_ports: dict[str, int] = field(default_factory=dict)
    dashboard_port: int | None = None

    @property
    def dashboard_url(self) -> str:
        return "" if self.dashboard_port is None else f"http://127.0.0.1:{self.dashboard_port}/"

    @property
    def all(self) -> list[FleetProcess]:
        return [self.hub, *self.agents.values()]

    @property
    def ports(self) -> list[int]:
        health = [process.health_port for process in self.all]
        dashboard = [] if self.dashboard_port is None else [self.dashboard_port]
        return [*health, *self.metrics_ports.values(), *dashboard]

    def stop(self) -> list[str]:
        """SIGTERM each (SIGKILL after 20 s); labels of those that did not exit cleanly."""
        unclean = []
        for process in self.all:
            if process.stop() != 0 and process.process is not None:
                unclean.append(process.label)
        return unclean


def start_processes(
    fleet: RunningFleet, charts: FleetCharts, workdir: Path, progress: Progress
) -> DemoProcesses:
    health, metrics, dashboard = allocate_ports(3)
    hub = FleetProcess(
        "fleetq hub",
        [
            *("hub", "--config", str(charts.hub_configuration)),
            *("--kubeconfig", str(charts.hub.kubeconfig)),
            *("--health-port", str(health), "--metrics-port", str(metrics)),
            *("--dashboard-port", str(dashboard)),
            *("--no-webhooks", "--identity", "demo-hub"),
        ],
        workdir / "hub.log",
        health,
    )
    processes = DemoProcesses(hub, metrics_ports={"hub": metrics}, dashboard_port=dashboard)
    hub.start()
    progress(
        f"  fleetq hub (pid {hub.pid}) on the manager as {charts.hub.username}, "
        f"metrics on :{metrics}, dashboard {processes.dashboard_url}, log {hub.log_path}"
    )
    agent_config = workdir / "agent-config.yaml"
    agent_config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": CONFIG_API_VERSION,
                "kind": "Configuration",
                "namespace": AGENT_NAMESPACE,
                "leaderElection": {"leaderElect": True, "resourceNamespace": AGENT_NAMESPACE},
            }
        )
    )
    for worker in fleet.workers:
        identity = charts.agents[worker.name]
        health, metrics = allocate_ports(2)
        agent = FleetProcess(
            f"fleetq agent on {worker.name}",
            [
                *("agent", "--config", str(agent_config)),
                *("--kubeconfig", str(identity.kubeconfig)),
                *("--cluster-name", worker.name, "--identity", f"demo-agent-{worker.name}"),
                *("--health-port", str(health), "--metrics-port", str(metrics)),
            ],
            workdir / f"agent-{worker.name}.log",
            health,
        )
        agent.start()
        processes.agents[worker.name] = agent
        processes.metrics_ports[worker.name] = metrics
        progress(
            f"  fleetq agent (pid {agent.pid}) on {worker.name} as {identity.username}, "
            f"metrics on :{metrics}"
        )
    return processes


def _get(member: ClusterAccess, group: tuple[str, str], plural: str, name: str) -> dict | None:
    from kubernetes import client

    with member.api_client() as api_client:
        try:
            found: dict = client.CustomObjectsApi(api_client).get_cluster_custom_object(
                *group, plural, name
            )
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
    return found


def wait_until_serving(fleet: RunningFleet, processes: DemoProcesses, progress: Progress) -> None:
    """Every process ready, every worker's MultiKueueCluster Active on the manager and its
    capacity report written, the manager's ClusterQueue Active."""
    for process in processes.all:
        until(process.ready, f"{process.label} ready", START_TIMEOUT_SECONDS)
    progress("  hub and agents ready (/readyz)")
    if processes.dashboard_url:
        health = processes.dashboard_url + "healthz"
        until(
            functools.partial(_answers, health), f"the dashboard ({health})", START_TIMEOUT_SECONDS
        )
        progress(f"  dashboard serving on {processes.dashboard_url}")
    for worker in fleet.workers:
        until(
            functools.partial(_active, fleet.manager, "multikueueclusters", worker.name),
            f"MultiKueueCluster {worker.name} Active (hub log: {processes.hub.log_path})",
            START_TIMEOUT_SECONDS,
        )
        until(
            functools.partial(_reported, worker),
            f"WorkerCapacity {worker.name} reported",
            START_TIMEOUT_SECONDS,
        )
        progress(f"  {worker.name}: connected (MultiKueueCluster Active), capacity reported")
    until(
        functools.partial(_active, fleet.manager, "clusterqueues", "cluster-queue"),
        "the manager's ClusterQueue Active",
        START_TIMEOUT_SECONDS,
    )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _active(member: ClusterAccess, plural: str, name: str) -> bool:
    return is_true(_get(member, KUEUE, plural, name), "Active")


def _reported(worker: ClusterAccess) -> bool:
    report = _get(worker, FLEETQ, "workercapacities", worker.name) or {}
    return bool((report.get("status") or {}).get("flavors"))
