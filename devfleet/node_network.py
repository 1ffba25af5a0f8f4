"""The network of a real node's pods: a CNI bridge on this machine, and no Service proxy.

No kube-proxy runs in a local fleet, so ClusterIPs lead nowhere. A real node's pods still
need two paths, and both go to addresses instead of ClusterIPs:

- pod -> apiserver: the manager's apiserver listens on this machine's own address too
  (`Fleet.up(manager_address=...)`), which the pods reach through the bridge's gateway;
  they are told so by KUBERNETES_SERVICE_HOST/PORT (devfleet.real_node_hub).
- apiserver -> pod (webhooks): every fleet apiserver runs with
  `--enable-aggregator-routing=true`, which makes it call a Service's endpoint IPs (the pod
  IPs on this bridge, routed by the host) instead of the Service's ClusterIP.

The bridge, its subnet and the IPAM state are private to one real node, so a teardown
removes them and nothing of the machine's own networking changes.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CNI_BIN_DIR = Path("/usr/lib/cni")
"""Where Debian's containernetworking-plugins (a dependency of podman) put the plugins."""


class NodeNetworkError(RuntimeError):
    """The machine's address or the CNI plugins could not be found; says what to install."""


@dataclass(frozen=True, slots=True)
class PodNetwork:
    """One bridge with a /24 of pod addresses; the gateway is the host's end of it."""

    bridge: str = "fqreal0"
    subnet: str = "10.244.77.0/24"
    gateway: str = "10.244.77.1"

    def conflist(self, ipam_dir: Path) -> dict[str, object]:
        """The CNI network containerd gives every pod sandbox (bridge + host-local IPAM)."""
        return {
            "cniVersion": "0.4.0",
            "name": "fleetq-real-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.subnet, "gateway": self.gateway}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(ipam_dir),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }

    def write(self, conf_dir: Path, ipam_dir: Path) -> Path:
        conf_dir.mkdir(parents=True, exist_ok=True)
        ipam_dir.mkdir(parents=True, exist_ok=True)
        path = conf_dir / "10-fleetq-real-node.conflist"
        path.write_text(json.dumps(self.conflist(ipam_dir), indent=2))
        return path

    def bridge_exists(self) -> bool:
        return Path("/sys/class/net", self.bridge).exists()

    def remove_bridge(self) -> None:
        """Delete the bridge the plugin made (gone already: nothing to do)."""
        subprocess.run(
            ["ip", "link", "delete", self.bridge], capture_output=True, check=False, timeout=10
        )


def missing_cni_plugins() -> list[str]:
    """The CNI plugins containerd needs that are not installed."""
    return [
        str(CNI_BIN_DIR / name)
        for name in ("bridge", "host-local", "loopback", "portmap")
        if not (CNI_BIN_DIR / name).exists()
    ]


def host_address() -> str:
    """This machine's IPv4 address on its default route: the node's InternalIP, and where
    the pods reach the apiserver (the kubelet refuses a loopback node IP)."""
    routes = _ip_json("-4", "route", "show", "default")
    if not routes:
        raise NodeNetworkError("no IPv4 default route: a real node needs a non-loopback address")
    device = str(routes[0]["dev"])
    for link in _ip_json("-4", "address", "show", "dev", device):
        for info in link.get("addr_info", []):
            if info.get("family") == "inet":
                return str(info["local"])
    raise NodeNetworkError(f"the default route's device {device} has no IPv4 address")


def _ip_json(*args: str) -> list[dict[str, Any]]:
    try:
        done = subprocess.run(
            ["ip", "-j", *args], capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise NodeNetworkError(f"`ip -j {' '.join(args)}` failed: {exc}") from exc
    answer: list[dict[str, Any]] = json.loads(done.stdout or "[]")
    return answer
