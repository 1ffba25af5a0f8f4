"""What a request asks to do, in the terms RBAC decides on.

A pending-workloads request is a `get` of the `pendingworkloads` subresource of a
`clusterqueues` (cluster-scoped) or `localqueues` (namespaced) object in group
visibility.kueue.x-k8s.io; everything else (discovery, /metrics) is a non-resource URL.
These are the attributes a SubjectAccessReview carries, and the words of the 403 message
mirror the apiserver's so users recognise them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hub.visibility.authentication import UserInfo
from hub.visibility.group import GROUP, PENDING_WORKLOADS, QueueResource, VisibilityVersion

_VERSIONS = "|".join(v.value for v in VisibilityVersion)
_CLUSTER_QUEUE = re.compile(
    rf"^/apis/{re.escape(GROUP)}/(?P<version>{_VERSIONS})/"
    rf"{QueueResource.CLUSTER_QUEUE.plural}/(?P<name>[^/]+)/{PENDING_WORKLOADS}/?$"
)
_LOCAL_QUEUE = re.compile(
    rf"^/apis/{re.escape(GROUP)}/(?P<version>{_VERSIONS})/namespaces/(?P<namespace>[^/]+)/"
    rf"{QueueResource.LOCAL_QUEUE.plural}/(?P<name>[^/]+)/{PENDING_WORKLOADS}/?$"
)
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class ResourceAttributes:
    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    name: str
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class NonResourceAttributes:
    verb: str
    path: str


RequestAttributes = ResourceAttributes | NonResourceAttributes


def request_attributes(method: str, path: str) -> RequestAttributes:
    """The attributes of `method path` (queue names as they appear, already unescaped)."""
    verb = _VERBS.get(method.upper(), method.lower())
    for pattern, resource in (
        (_CLUSTER_QUEUE, QueueResource.CLUSTER_QUEUE),
        (_LOCAL_QUEUE, QueueResource.LOCAL_QUEUE),
    ):
        match = pattern.match(path)
        if match is not None:
            return ResourceAttributes(
                verb=verb,
                group=GROUP,
                version=match["version"],
                resource=resource.plural,
                subresource=PENDING_WORKLOADS,
                name=match["name"],
                namespace=match.groupdict().get("namespace") or "",
            )
    return NonResourceAttributes(verb=verb, path=path)


def forbidden_message(user: UserInfo, attributes: RequestAttributes, reason: str) -> str:
    """The apiserver's wording: `<resource> "<name>" is forbidden: User "u" cannot ...`."""
    if isinstance(attributes, NonResourceAttributes):
        message = f'forbidden: User "{user.name}" cannot {attributes.verb} path "{attributes.path}"'
    else:
        where = (
            f'in the namespace "{attributes.namespace}"'
            if attributes.namespace
            else "at the cluster scope"
        )
        message = (
            f'{attributes.resource}.{attributes.group} "{attributes.name}" is forbidden: '
            f'User "{user.name}" cannot {attributes.verb} resource '
            f'"{attributes.resource}/{attributes.subresource}" in API group '
            f'"{attributes.group}" {where}'
        )
    return f"{message}: {reason}" if reason else message
