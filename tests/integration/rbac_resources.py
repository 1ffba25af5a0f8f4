"""The core and RBAC kinds integration tests create to act as another identity (a
ServiceAccount bound to a ClusterRole); the product's own kinds are in
`core.manager.watched_kinds`."""

from __future__ import annotations

from core.kube.resources import Resource

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
CLUSTER_ROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False, kind="ClusterRole"
)
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    namespaced=False,
    kind="ClusterRoleBinding",
)
