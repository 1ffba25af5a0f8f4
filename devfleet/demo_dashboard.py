"""The demo hub's dashboard: an identity to look at it with, and how to open it.

The demo's hub serves the dashboard on a loopback port (plain HTTP: it never leaves the
machine). Every request needs a bearer token the manager's apiserver accepts and RBAC for
each view, as in a real cluster (docs/dashboard.md), so the demo creates a ServiceAccount
`dashboard-viewer` in the hub's namespace whose ClusterRole may get and list what the
views show — Kueue's queues, flavors and Workloads, and the MultiKueueClusters the fleet
view lists — and nothing more (no actions). Its token is minted on demand with
`kubectl create token`, so the printed instructions hold no credential.
"""

from __future__ import annotations

from pathlib import Path

from devfleet.chart_install import HUB_NAMESPACE
from devfleet.cluster_access import ClusterAccess
from hub.dashboard.access import SHOWN_RESOURCES

VIEWER = "dashboard-viewer"
VIEWER_ROLE = "fleetq-demo-dashboard-viewer"


def viewer_manifests() -> list[dict]:
    """The ServiceAccount, its read-only ClusterRole and the binding between them."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": VIEWER, "namespace": HUB_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": VIEWER_ROLE},
            "rules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": list(SHOWN_RESOURCES),
                    "verbs": ["get", "list"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": VIEWER_ROLE},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": VIEWER_ROLE,
            },
            "subjects": [{"kind": "ServiceAccount", "name": VIEWER, "namespace": HUB_NAMESPACE}],
        },
    ]


def create_viewer(manager: ClusterAccess) -> None:
    """Create the viewer identity on the manager (one already there is left as it is)."""
    from kubernetes import utils

    with manager.api_client() as api_client:
        for manifest in viewer_manifests():
            try:
                utils.create_from_dict(api_client, manifest)
            except utils.FailToCreateError as error:
                if any(e.status != 409 for e in error.api_exceptions):
                    raise


def dashboard_lines(url: str, kubectl: Path, kubeconfig: Path) -> list[str]:
    """What the demo prints about its dashboard: where, and how to get a token for it."""
    token = (
        f"{kubectl} --kubeconfig {kubeconfig} create token {VIEWER} -n {HUB_NAMESPACE} "
        "--duration=24h"
    )
    return [
        f"  dashboard: {url}   (the hub's; every view needs a token)",
        f"    a token (read-only, ServiceAccount {HUB_NAMESPACE}/{VIEWER}): {token}",
        "    paste it into the page, or let a local proxy add it:",
        f"    {token} > /tmp/fleetq-demo-token && "
        f"fleetq dashboard --url {url} --token-file /tmp/fleetq-demo-token --open",
    ]
