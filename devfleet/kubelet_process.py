"""A kubelet (built from the Kubernetes module, `fleetq dev tools kubelet`) as a real node.

It registers with the manager's apiserver beside the kwok nodes, labelled
`fleetq.dev/real-node=true` and tainted with the same key (NoSchedule), so only pods that
ask for it (the hub chart with a nodeSelector and a toleration) land there; kwok leaves it
alone because it lacks kwok's annotation (devfleet.kwokctl.KWOK_NODE_PATCH).

The settings are what the sandbox of our CI allows (docs/install.md §7): cgroupfs with the
hybrid cgroup v1 layout (`failCgroupV1: false`), no QoS cgroups, no node-allocatable
enforcement, no image garbage collection (the imported images cannot be pulled again) and
eviction thresholds low enough that a full shared disk does not evict the hub. Its state,
pod logs and certificates live under its own work directory.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet.fleet_process import terminate_with_parent
from devfleet.process_group import stop_group
from devfleet.toolchain import tool

REAL_NODE_LABEL = "fleetq.dev/real-node"
"""Label and taint key of a real node (value "true")."""


class KubeletError(RuntimeError):
    """The kubelet is not built or exited; the message has its log's tail."""


def kubelet_binary() -> Path:
    path = tool("kubelet").binary("kubelet")
    if not path.exists():
        raise KubeletError(
            f"the kubelet is not built ({path}); run `fleetq dev tools kubelet` "
            "(from the Kubernetes module; ~2 min with a warm Go cache, ~10 min cold)"
        )
    return path


@dataclass
class Kubelet:
    """One kubelet process registered as `node_name` with the given runtime and identity."""

    workdir: Path
    node_name: str
    node_ip: str
    kubeconfig: Path
    client_ca: Path
    runtime_endpoint: str
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "kubelet.log"

    def configuration(self) -> dict[str, Any]:
        """The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) of this node."""
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": self.node_ip,
            "port": self.port,
            "readOnlyPort": 0,
            "healthzPort": 0,
            "containerRuntimeEndpoint": self.runtime_endpoint,
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "failSwapOn": False,
            "podLogsDir": str(self.workdir / "pod-logs"),
            "registerWithTaints": [
                {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}
            ],
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.client_ca)},
            },
            "authorization": {"mode": "Webhook"},
            "clusterDomain": "cluster.local",
            "serializeImagePulls": False,
            "nodeStatusReportFrequency": "10s",
            "shutdownGracePeriod": "0s",
        }

    def start(self) -> None:
        binary = kubelet_binary()
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "kubelet-config.yaml"
        config.write_text(yaml.safe_dump(self.configuration()))
        args = [
            str(binary),
            f"--config={config}",
            f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.workdir / 'root'}",
            f"--cert-dir={self.workdir / 'pki'}",
            f"--hostname-override={self.node_name}",
            f"--node-ip={self.node_ip}",
            f"--node-labels={REAL_NODE_LABEL}=true",
            "--v=2",
        ]
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=terminate_with_parent,
            )

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self, grace: float = 10.0) -> None:
        if self.process is not None:
            stop_group(self.process, grace)
            self.process = None

    def log_tail(self, lines: int = 30, grep: str = "") -> str:
        if not self.log_path.exists():
            return "(no kubelet log)"
        text = self.log_path.read_text(errors="replace").splitlines()
        picked = [line for line in text if grep in line] if grep else text
        return "kubelet log:\n" + "\n".join(picked[-lines:])
