"""Discovery documents an aggregated API server must serve for the group to be usable.

The kube-aggregator marks the APIService available only if `GET /apis/<group>/<version>`
answers 200, and builds cluster-wide discovery from `/apis` (falling back to the legacy
per-version lists when `/apis` is plain JSON, as here). kubectl and client-go then learn
the resources from the APIResourceList. The lists mirror upstream's: each queue kind is a
verb-less resource that exists only to carry its `pendingworkloads` subresource.
"""

from __future__ import annotations

import msgspec

from hub.visibility.group import (
    GROUP,
    PENDING_WORKLOADS,
    PREFERRED_VERSION,
    SUMMARY_KIND,
    QueueResource,
    VisibilityVersion,
)


class GroupVersionForDiscovery(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    group_version: str
    version: str


class APIGroup(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    """One group; `kind`/`apiVersion` are set only when it is the whole document."""

    kind: str | msgspec.UnsetType = msgspec.UNSET
    api_version: str | msgspec.UnsetType = msgspec.UNSET
    name: str
    versions: list[GroupVersionForDiscovery]
    preferred_version: GroupVersionForDiscovery


class APIGroupList(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    kind: str = "APIGroupList"
    api_version: str = "v1"
    groups: list[APIGroup]


class APIResource(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    name: str
    singular_name: str
    namespaced: bool
    kind: str
    verbs: list[str]


class APIResourceList(msgspec.Struct, kw_only=True, rename="camel", gc=False):
    kind: str = "APIResourceList"
    api_version: str = "v1"
    group_version: str
    resources: list[APIResource]


def _for_discovery(version: VisibilityVersion) -> GroupVersionForDiscovery:
    return GroupVersionForDiscovery(group_version=version.group_version, version=version.value)


def _group() -> APIGroup:
    return APIGroup(
        name=GROUP,
        versions=[_for_discovery(v) for v in VisibilityVersion],
        preferred_version=_for_discovery(PREFERRED_VERSION),
    )


def api_group() -> APIGroup:
    """`GET /apis/visibility.kueue.x-k8s.io`."""
    group = _group()
    group.kind = "APIGroup"
    group.api_version = "v1"
    return group


def api_group_list() -> APIGroupList:
    """`GET /apis`: this server serves exactly one group."""
    return APIGroupList(groups=[_group()])


def api_resource_list(version: VisibilityVersion) -> APIResourceList:
    """`GET /apis/visibility.kueue.x-k8s.io/<version>`, resources sorted by name."""
    resources: list[APIResource] = []
    for queue in QueueResource:
        resources.append(
            APIResource(
                name=queue.plural,
                singular_name=queue.value,
                namespaced=queue.namespaced,
                kind=SUMMARY_KIND,
                verbs=[],
            )
        )
        resources.append(
            APIResource(
                name=f"{queue.plural}/{PENDING_WORKLOADS}",
                singular_name="",
                namespaced=queue.namespaced,
                kind=SUMMARY_KIND,
                verbs=["get"],
            )
        )
    resources.sort(key=lambda r: r.name)
    return APIResourceList(group_version=version.group_version, resources=resources)
