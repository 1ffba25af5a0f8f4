"""`fleetq dev real-node`: a fleet's manager with a real node, and the hub chart running on it.

The steps, each printed as it goes: check what is missing (packages, the kubelet, the
image archive) and stop with the commands that fix it; start a fleet of one full manager
(scheduler, controller-manager, a kwok node) whose apiserver the node's pods can reach;
start the real node; `helm install` the hub chart with 2 replicas on it; wait for both
pods Ready, a Lease holder, and a Job suspended by the webhook and admitted by the hub.
Then everything is torn down, unless `--keep` (then `fleetq dev real-node --down`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from devfleet.chart_install import HUB_NAMESPACE, HUB_RELEASE, helm_uninstall
from devfleet.fleet import Fleet
from devfleet.fleet_spec import load_fleet_spec
from devfleet.node_network import host_address
from devfleet.real_node import RealNode, RealNodeError, image_archive, preflight
from devfleet.real_node_hub import (
    create_queues,
    hub_values,
    install_hub,
    submit_and_wait_admitted,
    wait_leader,
    wait_rolled_out,
)

Say = Callable[[str], None]
ROLLOUT_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class RealNodeOptions:
    fleet_name: str = "real-node"
    keep: bool = False


def start_fleet(name: str, say: Say) -> Fleet:
    """One full manager (no workers, no operators), its apiserver open to the node's pods."""
    fleet = Fleet(name)
    spec = load_fleet_spec().with_worker_count(0)
    fleet.up(spec, lite=False, progress=say, operators=(), manager_address=host_address())
    return fleet


def run_real_node(options: RealNodeOptions, say: Say) -> int:
    archive = image_archive()
    problems = preflight(archive)
    if problems:
        raise RealNodeError("a real node cannot start:\n  " + "\n  ".join(problems))
    began = time.monotonic()
    fleet = start_fleet(options.fleet_name, say)
    node = RealNode(fleet)
    try:
        info = node.up(archive, progress=say)
        manager = fleet.access().manager
        say(f"helm install {HUB_RELEASE} (2 replicas on {info.name}, image {info.image})")
        install_hub(manager, hub_values(info), fleet.dir / "helm")
        pods = wait_rolled_out(manager, 2, timeout=ROLLOUT_TIMEOUT_SECONDS, progress=say)
        names = {pod.name for pod in pods}
        leader = wait_leader(manager, lambda holder: holder in names, timeout=60)
        say(f"  both hub pods Ready on {info.name}; Lease held by {leader}")
        namespace = "real-node-demo"
        _create_namespace(fleet, namespace)
        create_queues(manager, namespace, "demo")
        job = submit_and_wait_admitted(manager, namespace)
        say(
            f"  Job {namespace}/{job.name}: suspended by the webhook on create "
            f"({job.suspended_on_create}), admitted to {job.admitted_by} and started "
            f"in {job.seconds:.1f}s"
        )
        say(f"real node and hub up in {time.monotonic() - began:.0f}s")
        if options.keep:
            say(
                f"kept: export KUBECONFIG={manager.kubeconfig}; "
                f"`fleetq dev real-node --down --name {options.fleet_name}` removes it"
            )
            return 0
        helm_uninstall(manager, HUB_RELEASE, HUB_NAMESPACE)
    except BaseException:
        if options.keep:
            say("a step failed; the fleet and the node are kept for a look")
        else:
            tear_down(fleet, node, say)
        raise
    tear_down(fleet, node, say)
    return 0


def tear_down(fleet: Fleet, node: RealNode, say: Say) -> None:
    say("tearing down the real node and the fleet")
    node.down(progress=say)
    fleet.down(progress=say)


def down(name: str, say: Say) -> int:
    """Remove a kept real node and its fleet (processes found by their work directory)."""
    fleet = Fleet(name)
    tear_down(fleet, RealNode(fleet), say)
    return 0


def _create_namespace(fleet: Fleet, namespace: str) -> None:
    from kubernetes import client

    with fleet.access().manager.api_client() as api_client:
        client.CoreV1Api(api_client).create_namespace({"metadata": {"name": namespace}})
