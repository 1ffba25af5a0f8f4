"""The two workers of `fleetq dev conformance --suite multikueue`, each with the agent as its Kueue.

Upstream's `multikueue/baseline` suite drives three kind clusters: a manager running
Kueue's MultiKueue manager and two workers running Kueue (docs/conformance.md). Here the
manager is the hub (devfleet.conformance), and each worker gets, beside what the manager
gets:

- the real `fleetq agent` as its Kueue: upstream's MultiKueue e2e Configuration (the
  one the hub runs), namespace `kueue-system`, Kueue's own leader-election Lease
  (`--lease-name`, so readiness check 4 sees the agent leading), its admission webhooks
  registered by URL as Kueue's are on a worker;
- the presence-only stand-in Deployment and webhook Service (checks 1 and 2), and the
  `kueue-manager-config` ConfigMap holding the agent's Configuration;
- its apiserver offered at `<kind name>-control-plane:6443`, the server the suite writes
  into the MultiKueue kubeconfigs it hands the hub: a loopback address of its own
  (devfleet.kind_names), a relay from there to the apiserver (devfleet.loopback_relay),
  the name in /etc/hosts (devfleet.hosts_file) and in the serving certificate (the fleet
  is started with those SANs).

Then the suite's kubeconfig: contexts `kind-kind-manager`, `kind-kind-worker1`,
`kind-kind-worker2` (devfleet.suite_kubeconfig).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_objects import (
    create_if_absent,
    delete_webhook_configurations,
    deployment_available,
)
from devfleet.conformance_stand_in import (
    DEPLOYMENT,
    KUEUE_NAMESPACE,
    LEADER_ELECTION_ID,
    deployment_manifest,
    manager_config_map_manifest,
    namespace_manifest,
    webhook_service_manifest,
)
from devfleet.fleet_crds import install_crds
from devfleet.fleet_process import FleetProcess
from devfleet.hosts_file import ensure_entries
from devfleet.kind_names import CONTROL_PLANE_PORT, KindCluster, kind_clusters
from devfleet.loopback_relay import Endpoint, LoopbackRelay
from devfleet.polling import until
from devfleet.ports import allocate_ports
from devfleet.suite_kubeconfig import suite_kubeconfig

Say = Callable[[str], None]

KIND_NODE: dict[str, Any] = {
    "name": "kind-worker",
    "count": 1,
    "capacity": {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"},
    "labels": {"instance-type": "on-demand", "cloud.provider.com/node-group": "tas-node"},
}
"""The one worker node of upstream's MultiKueue kind clusters
(`hack/testing/multikueue/{manager,worker}-cluster.kind.yaml`, same labels), on every
cluster; its capacity is a kind node's on a modest machine."""
MULTIKUEUE_FLEET: dict[str, Any] = {
    "manager": {"nodeGroups": [KIND_NODE]},
    "workers": [
        {"name": "worker-1", "nodeGroups": [KIND_NODE]},
        {"name": "worker-2", "nodeGroups": [KIND_NODE]},
    ],
}


def named_clusters(fleet: RunningFleet) -> tuple[KindCluster, ...]:
    return kind_clusters(fleet.manager.name, [worker.name for worker in fleet.workers])


def fleet_named_clusters() -> tuple[KindCluster, ...]:
    """The kind names of MULTIKUEUE_FLEET's clusters, before it is up (for its SANs)."""
    return kind_clusters("manager", [w["name"] for w in MULTIKUEUE_FLEET["workers"]])


def apiserver_sans() -> dict[str, tuple[str, ...]]:
    """Fleet role -> the extra serving-certificate names of its apiserver."""
    return {c.role: c.certificate_sans for c in fleet_named_clusters() if c.certificate_sans}


def write_suite_kubeconfig(fleet: RunningFleet, path: Path) -> Path:
    """The suite's one kubeconfig (contexts `kind-kind-…`), from the fleet's own."""
    kubeconfigs = {m.name: yaml.safe_load(m.kubeconfig.read_text()) for m in fleet.all}
    path.write_text(yaml.safe_dump(suite_kubeconfig(named_clusters(fleet), kubeconfigs)))
    path.chmod(0o600)
    return path


class MultiKueueWorkers:
    """The worker side of the run (module docstring): `start()` before the suite,
    `stop()` after it (agents stopped, relays closed; the hosts block is kept, as later
    runs write the same one)."""

    def __init__(
        self,
        fleet: RunningFleet,
        agent_configuration: Callable[[Path], dict[str, Any]],
        workdir: Path,
        say: Say,
    ) -> None:
        self.fleet = fleet
        self.agent_configuration = agent_configuration
        """Certificate directory -> the agent's Configuration (the hub's, its own certs)."""
        self.workdir = workdir
        self.say = say
        self.named = [c for c in named_clusters(fleet) if c.loopback is not None]
        self.relays: list[LoopbackRelay] = []
        self.agents: dict[str, FleetProcess] = {}

    def start(self) -> None:
        self._offer_control_plane_names()
        for cluster in self.named:
            member = self.fleet.cluster(cluster.role)
            install_crds(member)
            self._apply_stand_ins(member)
            self.agents[cluster.role] = self._start_agent(cluster, member)
        for cluster in self.named:
            agent = self.agents[cluster.role]
            until(agent.ready, f"{agent.label} ready", 120.0)
            until(
                functools.partial(
                    deployment_available,
                    self.fleet.cluster(cluster.role),
                    KUEUE_NAMESPACE,
                    DEPLOYMENT,
                ),
                f"stand-in Deployment {KUEUE_NAMESPACE}/{DEPLOYMENT} on {cluster.role} available",
                120.0,
            )
            self.say(
                f"{cluster.role} as {cluster.kind_name}: fleetq agent ready (pid {agent.pid},"
                f" log {agent.log_path}), at {cluster.control_plane_server}"
            )

    def stop(self) -> None:
        for role, agent in self.agents.items():
            if agent.stop() is None:
                with contextlib.suppress(Exception):
                    delete_webhook_configurations(self.fleet.cluster(role))
        for relay in self.relays:
            relay.stop()

    def _offer_control_plane_names(self) -> None:
        for cluster in self.named:
            assert cluster.loopback is not None
            port = urlparse(self.fleet.cluster(cluster.role).server).port or 443
            relay = LoopbackRelay(
                Endpoint(cluster.loopback, CONTROL_PLANE_PORT), Endpoint("127.0.0.1", port)
            )
            relay.start()
            self.relays.append(relay)
        entries = {c.control_plane_host: c.loopback for c in self.named if c.loopback}
        changed = ensure_entries(entries)
        listing = ", ".join(f"{name} -> {address}" for name, address in sorted(entries.items()))
        self.say(
            f"/etc/hosts: {'added' if changed else 'already has'} fleetq's control-plane names"
            f" ({listing}); relays to the workers' apiservers on port {CONTROL_PLANE_PORT}"
        )

    def _apply_stand_ins(self, member: ClusterAccess) -> None:
        create_if_absent(member, namespace_manifest())
        create_if_absent(member, webhook_service_manifest())
        create_if_absent(member, deployment_manifest())

    def _start_agent(self, cluster: KindCluster, member: ClusterAccess) -> FleetProcess:
        configuration = self.agent_configuration(self.workdir / f"agent-{cluster.role}-certs")
        text = yaml.safe_dump(configuration)
        config = self.workdir / f"agent-{cluster.role}-config.yaml"
        config.write_text(text)
        create_if_absent(member, manager_config_map_manifest(text))
        health, metrics, webhook = allocate_ports(3)
        args = [
            *("agent", "--config", str(config), "--kubeconfig", str(member.kubeconfig)),
            *("--cluster-name", cluster.kind_name, "--lease-name", LEADER_ELECTION_ID),
            *("--health-port", str(health), "--metrics-port", str(metrics)),
            *("--webhooks", "--webhook-url-host", "127.0.0.1", "--webhook-port", str(webhook)),
        ]
        log = self.workdir / f"agent-{cluster.role}.log"
        agent = FleetProcess(f"fleetq agent on {cluster.role}", args, log, health)
        agent.start()
        return agent
