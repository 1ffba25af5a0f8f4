"""The identity the hub uses on a worker: a ServiceAccount and exactly the rights MultiKueue uses.

The hub (like upstream's MultiKueue manager) creates, watches, updates and deletes remote
Workloads and jobs of every dispatched kind and their status (Pods, StatefulSets and
LeaderWorkerSets among them: a Pod or a pod group is copied Pod by Pod), records Events,
and reads fleetq's WorkerCapacity reports. Nothing else: no Secrets, no wildcards. A token
of this account is what lands in the manager's Secret, so whoever reads that Secret gets
these rights and no more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cli.join.fleet_file import IdentitySpec
from core.api.groups import FLEETQ_GROUP, KUEUE_GROUP
from integrations.framework.job_capabilities import dispatchable
from integrations.registry import REGISTRY

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fleetq-join"
FULL_CONTROL = ("get", "list", "watch", "create", "update", "patch", "delete")
READ_ONLY = ("get", "list", "watch")

Manifest = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One RBAC rule: these verbs on these resources of one API group."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def manifest(self) -> Manifest:
        return {
            "apiGroups": [self.group],
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


MULTIKUEUE_WORKER_RULES: tuple[PolicyRule, ...] = (
    # Remote copies of manager Workloads, and their status (admission, finish).
    PolicyRule(KUEUE_GROUP, ("workloads", "workloads/status"), FULL_CONTROL),
    # Remote jobs of every dispatched kind: created suspended (Pods: gated), status copied
    # back, deleted when done.
    *(
        PolicyRule(
            kind.resource.group,
            (kind.resource.plural, f"{kind.resource.plural}/status"),
            FULL_CONTROL,
        )
        for kind in dispatchable(REGISTRY)
    ),
    # Events about remote objects (core and events.k8s.io are the same objects).
    PolicyRule("", ("events",), ("create",)),
    PolicyRule("events.k8s.io", ("events",), ("create",)),
    # The worker agent's capacity reports, read for capacity-aware dispatch.
    PolicyRule(FLEETQ_GROUP, ("workercapacities",), READ_ONLY),
    # Capacity-aware dispatch judges a worker's report against the ClusterQueue a
    # LocalQueue feeds and that queue's flavors (their node labels and taints).
    PolicyRule(KUEUE_GROUP, ("localqueues", "resourceflavors"), ("get",)),
    # Manager quota automation (a feature gate) sums the quotas of the worker ClusterQueues
    # the manager's LocalQueues feed.
    PolicyRule(KUEUE_GROUP, ("localqueues", "clusterqueues"), ("list",)),
    # `fleetq logs` streams a dispatched Job's pods' logs through this identity.
    PolicyRule("", ("pods",), ("get", "list")),
    PolicyRule("", ("pods/log",), ("get",)),
)


def _labels() -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY}


def namespace_manifest(name: str) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account_manifest(identity: IdentitySpec) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": identity.service_account,
            "namespace": identity.namespace,
            "labels": _labels(),
        },
        # Tokens come from the TokenRequest API only; nothing needs a mounted token.
        "automountServiceAccountToken": False,
    }


def cluster_role_manifest(identity: IdentitySpec) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": identity.role_name, "labels": _labels()},
        "rules": [rule.manifest() for rule in MULTIKUEUE_WORKER_RULES],
    }


def cluster_role_binding_manifest(identity: IdentitySpec) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": identity.role_name, "labels": _labels()},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": identity.role_name,
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": identity.service_account,
                "namespace": identity.namespace,
            }
        ],
    }


def identity_manifests(identity: IdentitySpec) -> list[Manifest]:
    """In apply order: the namespace first, the binding after the role."""
    return [
        namespace_manifest(identity.namespace),
        service_account_manifest(identity),
        cluster_role_manifest(identity),
        cluster_role_binding_manifest(identity),
    ]
