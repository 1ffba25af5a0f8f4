"""The LeaderWorkerSet controller (sigs.k8s.io/lws) as the fleet runs it.

Its Configuration keeps leader election and internal certificate management off (the
latter would want a Service and a Secret in its namespace) and every server on loopback.
Its webhooks are registered by URL as its kustomization builds them: the LeaderWorkerSet
defaulting and validation, and the Pod webhooks (only for Pods labelled
`leaderworkerset.sigs.k8s.io/name`) that give each Pod its group and worker indexes, the
leader's address and the group's size. Without its defaulting a LeaderWorkerSet lacks its
restart policy and network configuration, so readiness waits for a server-side dry-run
create to come back defaulted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from devfleet.operators.defaulting_probe import DefaultingProbe, wait_defaulted
from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator
from devfleet.toolchain import LWS_VERSION

if TYPE_CHECKING:
    from devfleet.operators.process import OperatorProcess

CONFIG_API_VERSION = "config.lws.x-k8s.io/v1alpha1"
LWS_GROUP, LWS_API_VERSION = "leaderworkerset.x-k8s.io", "v1"
DEFAULT_RESTART_POLICY = "RecreateGroupOnPodRestart"
"""What LWS's defaulting webhook (and not its CRD schema) sets as the restart policy."""

Json = dict[str, Any]


def controller_configuration(launch: Launch) -> Json:
    """The controller's Configuration (read with strict decoding: known fields only)."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {
            "host": WEBHOOK_HOST,
            "port": launch.ports["webhook"],
            "certDir": str(launch.cert_dir),
        },
        "metrics": {"bindAddress": launch.address("metrics")},
        "health": {"healthProbeBindAddress": launch.address("health")},
        "clientConnection": {"qps": launch.qps, "burst": launch.burst},
    }


def command(launch: Launch) -> list[str]:
    config = launch.workdir / "config.yaml"
    config.write_text(yaml.safe_dump(controller_configuration(launch), sort_keys=False))
    return [
        f"--config={config}",
        f"--kubeconfig={launch.kubeconfig}",
        "--leader-elect=false",  # its flag defaults to true and wins over a config unset
        "--zap-log-level=info",
        "--zap-encoder=console",
        "--zap-stacktrace-level=panic",
    ]


def probe_leaderworkerset(name: str) -> Json:
    """The smallest LeaderWorkerSet the validating webhook accepts."""
    return {
        "apiVersion": f"{LWS_GROUP}/{LWS_API_VERSION}",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "leaderWorkerTemplate": {
                "size": 1,
                "workerTemplate": {"spec": {"containers": [{"name": "probe", "image": "probe"}]}},
            }
        },
    }


def defaulted_by_webhook(lws: Mapping[str, Any]) -> bool:
    """Fields only LWS's defaulting webhook sets (its CRD schema defaults neither)."""
    spec = lws.get("spec") or {}
    template = spec.get("leaderWorkerTemplate") or {}
    network = spec.get("networkConfig") or {}
    return (
        template.get("restartPolicy") == DEFAULT_RESTART_POLICY
        and network.get("subdomainPolicy") == "Shared"
    )


def check_defaulting(process: OperatorProcess, timeout: float, namespace: str = "default") -> None:
    """Dry-run create a LeaderWorkerSet until it comes back defaulted by the webhook."""
    probe = probe_leaderworkerset(f"fleetq-webhook-probe-{os.getpid()}")
    wait_defaulted(
        process,
        timeout,
        DefaultingProbe(
            "LeaderWorkerSet",
            LWS_GROUP,
            LWS_API_VERSION,
            "leaderworkersets",
            probe,
            defaulted_by_webhook,
        ),
        namespace,
    )


LWS = Operator(
    name="lws",
    title="the LeaderWorkerSet controller",
    tool="lws",
    binary="lws-controller",
    module="sigs.k8s.io/lws",
    version=LWS_VERSION,
    command=command,
    crd_dirs=("config/crd/bases",),
    webhook_dir="config/webhook",
    check_ready=check_defaulting,
)
