"""Where each kind join touches lives in the API: group, plural, scope, and the object's URL."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.api.groups import FLEETQ_GROUP, FLEETQ_VERSION, KUEUE_GROUP


@dataclass(frozen=True, slots=True)
class KindInfo:
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """`plural.group`, the way RBAC messages and kubectl name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None) -> str:
        return f"{self.collection_path(namespace)}/{name}"


KINDS: Mapping[str, KindInfo] = {
    "Namespace": KindInfo("", "v1", "namespaces", namespaced=False),
    "ServiceAccount": KindInfo("", "v1", "serviceaccounts", namespaced=True),
    "Secret": KindInfo("", "v1", "secrets", namespaced=True),
    "ClusterRole": KindInfo("rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False),
    "ClusterRoleBinding": KindInfo(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False
    ),
    "LocalQueue": KindInfo(KUEUE_GROUP, "v1beta2", "localqueues", namespaced=True),
    "ClusterQueue": KindInfo(KUEUE_GROUP, "v1beta2", "clusterqueues", namespaced=False),
    "MultiKueueCluster": KindInfo(KUEUE_GROUP, "v1beta2", "multikueueclusters", namespaced=False),
    "MultiKueueConfig": KindInfo(KUEUE_GROUP, "v1beta2", "multikueueconfigs", namespaced=False),
    "AdmissionCheck": KindInfo(KUEUE_GROUP, "v1beta2", "admissionchecks", namespaced=False),
    "MultiKueueClusterSet": KindInfo(
        FLEETQ_GROUP, FLEETQ_VERSION, "multikueueclustersets", namespaced=False
    ),
}


def kind_of(manifest: Mapping[str, Any]) -> KindInfo:
    return KINDS[str(manifest["kind"])]


def manifest_path(manifest: Mapping[str, Any]) -> str:
    """The URL of the object a manifest describes."""
    metadata = manifest["metadata"]
    return kind_of(manifest).object_path(metadata["name"], metadata.get("namespace"))


def display_name(manifest: Mapping[str, Any]) -> str:
    """`Kind namespace/name` or `Kind name`, for progress lines."""
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    name = f"{namespace}/{metadata['name']}" if namespace else metadata["name"]
    return f"{manifest['kind']} {name}"
