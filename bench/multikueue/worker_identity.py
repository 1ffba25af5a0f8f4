"""A ServiceAccount identity for the manager on each worker, as a real fleet would have.

The manager reaches a worker with a bearer token of its own, not the worker's admin
certificate, so the worker's audit log tells the manager's writes apart from the worker's
local Kueue (which uses the admin certificate here). The token is inline in the kubeconfig
(a token *file* would be refused as insecure by both managers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench.multikueue.queue_setup import apply_manifests
from devfleet.upstream_kueue import kubectl

IDENTITY_NAMESPACE = "multikueue-identity"
IDENTITY_NAME = "multikueue-manager"
USERNAME = f"system:serviceaccount:{IDENTITY_NAMESPACE}:{IDENTITY_NAME}"
"""How the worker's apiserver (and its audit log) names the manager."""


def mint_manager_kubeconfig(admin_kubeconfig: Path, *, duration: str = "4h") -> str:
    """Create the identity on the worker (cluster-admin: a benchmark, not least privilege)
    and return a kubeconfig that uses its token."""
    apply_manifests(
        admin_kubeconfig,
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": IDENTITY_NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": IDENTITY_NAME, "namespace": IDENTITY_NAMESPACE},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": IDENTITY_NAME},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": IDENTITY_NAME,
                        "namespace": IDENTITY_NAMESPACE,
                    }
                ],
            },
        ],
    )
    token = kubectl(
        admin_kubeconfig,
        "create",
        "token",
        IDENTITY_NAME,
        "-n",
        IDENTITY_NAMESPACE,
        f"--duration={duration}",
    ).strip()
    admin: dict[str, Any] = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "worker", "cluster": cluster}],
        "users": [{"name": IDENTITY_NAME, "user": {"token": token}}],
        "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": IDENTITY_NAME}}],
        "current-context": "worker",
    }
    return yaml.safe_dump(document, sort_keys=False)
