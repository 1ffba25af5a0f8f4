"""The KubeRay operator (github.com/ray-project/kuberay/ray-operator) as the fleet runs it.

Out of cluster with command-line flags only (no config file): leader election off, health
and metrics servers on loopback, console logs. Its CRDs (RayCluster, RayJob, RayService)
come from the module's `config/crd/bases`. KubeRay's own webhooks are optional (off unless
ENABLE_WEBHOOKS is set) and stay off: fleetq's job webhooks are what queue Ray objects.

It runs under the Ray dashboard stand-in (`devfleet.ray_dashboard_stand_in`, see there):
on kwok nodes no Ray runs, and KubeRay asks each cluster's dashboard how a RayJob's Ray
job is doing.
"""

from __future__ import annotations

import sys

from devfleet.operators.spec import Launch, Operator
from devfleet.toolchain import KUBERAY_VERSION


def command(launch: Launch) -> list[str]:
    return [
        f"--kubeconfig={launch.kubeconfig}",
        "--enable-leader-election=false",
        f"--health-probe-bind-address={launch.address('health')}",
        f"--metrics-addr={launch.address('metrics')}",
        f"--qps={launch.qps:g}",
        f"--burst={launch.burst}",
        "--log-stdout-encoder=console",
    ]


def under_dashboard_stand_in(launch: Launch) -> list[str]:
    """Run the operator as a child of the stand-in, with HTTP_PROXY pointing at it."""
    return [
        sys.executable,
        "-m",
        "devfleet.ray_dashboard_stand_in",
        f"--port={launch.ports['dashboard']}",
        "--",
    ]


KUBERAY = Operator(
    name="kuberay",
    title="the KubeRay operator",
    tool="kuberay",
    binary="kuberay-operator",
    module="github.com/ray-project/kuberay/ray-operator",
    version=KUBERAY_VERSION,
    command=command,
    crd_dirs=("config/crd/bases",),
    port_names=("health", "metrics", "dashboard"),
    run_under=under_dashboard_stand_in,
)
