"""The ClusterRoles users bind, named and labelled as upstream Kueue's, generated.

Upstream ships `kueue-batch-admin-role` and `kueue-batch-user-role`, two aggregated
ClusterRoles gathering per-object editor and viewer roles by label, and its users (and its
e2e suites) bind those names. The hub chart ships the same: the Kueue objects' roles from
the table below, one editor/viewer pair per registered job kind (kinds of Kubernetes' own
`""` and `apps` groups are left to Kubernetes' view/edit roles, as upstream does). Viewers
also aggregate into Kubernetes' view/edit/admin roles where upstream's do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from integrations.framework.job_kind import JobKind

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
ADMIN, USER = "rbac.kueue.x-k8s.io/batch-admin", "rbac.kueue.x-k8s.io/batch-user"
AGGREGATE_ALL = ("view", "admin", "edit")
EDIT_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
VIEW_VERBS = ("get", "list", "watch")
BUILT_IN_WORKLOAD_GROUPS = frozenset({"", "apps"})


@dataclass(frozen=True, slots=True)
class UserRole:
    name: str
    """Without the `kueue-` prefix: `job-editor-role`."""
    group: str
    resource: str
    verbs: tuple[str, ...]
    status: bool
    """Also `get` on the status subresource."""
    batch_user: bool
    aggregate_to: tuple[str, ...] = ()


def _kueue_object_roles() -> list[UserRole]:
    """Upstream's table: admins manage every Kueue object; users see their queues,
    Workloads and pending workloads."""
    roles = []
    for resource, status, user_views, aggregate in (
        ("clusterqueues", True, False, ("admin",)),
        ("cohorts", False, False, ("admin",)),
        ("localqueues", True, True, AGGREGATE_ALL),
        ("resourceflavors", False, False, ("admin",)),
        ("topologies", False, False, ("admin",)),
        ("workloads", True, True, AGGREGATE_ALL),
    ):
        singular = resource.removesuffix("ies") + "y" if resource.endswith("ies") else resource[:-1]
        roles += [
            UserRole(f"{singular}-editor-role", KUEUE_GROUP, resource, EDIT_VERBS, status, False),
            UserRole(
                f"{singular}-viewer-role",
                KUEUE_GROUP,
                resource,
                VIEW_VERBS,
                status,
                user_views,
                aggregate,
            ),
        ]
    for scope, user in (("cq", False), ("lq", True)):
        owner = "clusterqueues" if scope == "cq" else "localqueues"
        roles.append(
            UserRole(
                f"pending-workloads-{scope}-viewer-role",
                VISIBILITY_GROUP,
                f"{owner}/pendingworkloads",
                VIEW_VERBS,
                False,
                user,
                AGGREGATE_ALL,
            )
        )
    return roles


def _job_kind_roles(kinds: Iterable[JobKind]) -> list[UserRole]:
    roles = []
    for kind in kinds:
        resource = kind.resource
        if resource.group in BUILT_IN_WORKLOAD_GROUPS:
            continue
        name = resource.kind.lower()
        roles += [
            UserRole(
                f"{name}-editor-role", resource.group, resource.plural, EDIT_VERBS, True, True
            ),
            UserRole(
                f"{name}-viewer-role",
                resource.group,
                resource.plural,
                VIEW_VERBS,
                True,
                True,
                AGGREGATE_ALL,
            ),
        ]
    return roles


def user_roles(kinds: Iterable[JobKind]) -> list[UserRole]:
    return _kueue_object_roles() + _job_kind_roles(kinds)


def _flow(items: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def _role_document(role: UserRole) -> list[str]:
    lines = [
        "---",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: ClusterRole",
        "metadata:",
        f"  name: kueue-{role.name}",
        "  labels:",
        '    {{- include "fleetq-hub.labels" . | nindent 4 }}',
        f'    rbac.kueue.x-k8s.io/role: "{role.name.removesuffix("-role")}"',
        f'    {ADMIN}: "true"',
    ]
    if role.batch_user:
        lines.append(f'    {USER}: "true"')
    lines += [
        f'    rbac.authorization.k8s.io/aggregate-to-{to}: "true"' for to in role.aggregate_to
    ]
    lines += [
        "rules:",
        f"  - apiGroups: {_flow([role.group])}",
        f"    resources: {_flow([role.resource])}",
        f"    verbs: {_flow(role.verbs)}",
    ]
    if role.status:
        lines += [
            f"  - apiGroups: {_flow([role.group])}",
            f"    resources: {_flow([role.resource + '/status'])}",
            '    verbs: ["get"]',
        ]
    return lines


def _aggregated(name: str, label: str) -> list[str]:
    return [
        "---",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: ClusterRole",
        "metadata:",
        f"  name: kueue-{name}",
        "  labels:",
        '    {{- include "fleetq-hub.labels" . | nindent 4 }}',
        "aggregationRule:",
        "  clusterRoleSelectors:",
        "    - matchLabels:",
        f'        {label}: "true"',
        "# rules: filled in by the controller-manager's ClusterRole aggregation",
    ]


def user_roles_template(kinds: Iterable[JobKind], header: str) -> str:
    """charts/fleetq-hub/templates/user-roles.yaml: rendered when `userRoles.enabled`."""
    lines = [header.rstrip("\n"), "{{- if .Values.userRoles.enabled }}"]
    lines += _aggregated("batch-admin-role", ADMIN)
    lines += _aggregated("batch-user-role", USER)
    for role in user_roles(kinds):
        lines += _role_document(role)
    lines.append("{{- end }}")
    return "\n".join(lines) + "\n"
