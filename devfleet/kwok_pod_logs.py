"""Container logs for every pod on the fleet's kwok nodes, so `fleetq logs` reads real ones.

kwok's nodes run no processes, so a pod has no log of its own; but the kwok controller
serves the kubelet's log endpoint from files a `ClusterLogs` resource names, and the
apiserver proxies `pods/log` to it as to any kubelet. The fleet gives every kwokctl cluster
one ClusterLogs that matches every pod and container (no selector, no container list) and
serves one file written into the fleet's state directory (in the container runtime's log
format, which kwok parses as a kubelet does). So the whole chain behind
`fleetq logs` — the manager's Workload, the worker's apiserver, its node's "kubelet" — runs
for any kind of job; only the text is the same for every container.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

LOG_FILE: Final = "kwok-pod.log"
LOG_TEXT: Final = (
    "kwok: this container runs on a kwok node, which runs no processes\n"
    "kwok: its log is served by the kwok controller (devfleet/kwok_pod_logs.py)\n"
)
"""Every container's log: what `fleetq logs` prints after the `[pod/container]` prefix."""
WRITTEN_AT: Final = "2026-01-01T00:00:00.000000000Z"


def cri_log(text: str, at: str = WRITTEN_AT) -> str:
    """`text` in the container runtime's log file format, which kwok parses as a kubelet
    does: one `<time> stdout F <line>` entry per line."""
    return "".join(f"{at} stdout F {line}\n" for line in text.splitlines())


def pod_log_documents(state_dir: Path) -> list[str]:
    """The kwokctl config documents that serve `LOG_TEXT` as every container's log (the
    file is written into `state_dir`, which must outlive the clusters)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LOG_FILE
    path.write_text(cri_log(LOG_TEXT))
    document = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "fleetq-every-pod"},
        "spec": {"logs": [{"logsFile": str(path.resolve()), "follow": False}]},
    }
    return [json.dumps(document)]
