"""Which REST collection a call addresses, and the URL paths built from it.

Every client, watch and informer call names its resource with a `ResourceRef`-shaped value:
the registry's `KindInfo` (kueue and fleetq kinds) already is one, and `Resource` covers the
built-in kinds the runtime itself writes (Leases, Events) or that integrations read (Jobs,
Pods, ConfigMaps, Secrets). Paths are pure string functions, so they are tested without a
server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote


class ResourceRef(Protocol):
    """What a caller must say about a resource to reach it over REST."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Resource:
    """A REST collection of the apiserver, e.g. ("", "v1", "configmaps", namespaced)."""

    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def resource_label(resource: ResourceRef) -> str:
    """A short name for logs and metrics: `configmaps`, `workloads.kueue.x-k8s.io`."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def collection_path(resource: ResourceRef, namespace: str | None = None) -> str:
    """URL path of a collection; a namespaced resource without namespace means all of them."""
    group = resource.group
    prefix = f"/apis/{group}/{resource.version}" if group else f"/api/{resource.version}"
    if resource.namespaced and namespace:
        prefix += f"/namespaces/{quote(namespace, safe='')}"
    return f"{prefix}/{resource.plural}"


def object_path(
    resource: ResourceRef,
    name: str,
    namespace: str | None = None,
    subresource: str | None = None,
) -> str:
    """URL path of one object, or of one of its subresources (`status`, `scale`, ...)."""
    if not name:
        raise ValueError(f"an object of {resource_label(resource)} needs a name")
    if resource.namespaced and not namespace:
        raise ValueError(f"{resource_label(resource)} is namespaced: give a namespace for {name}")
    path = f"{collection_path(resource, namespace)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path


CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
PODS = Resource("", "v1", "pods", kind="Pod")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
JOBS = Resource("batch", "v1", "jobs", kind="Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
EVENTS = Resource("events.k8s.io", "v1", "events", kind="Event")
