"""The `ObjectLookup` the manager gives kinds that read referenced objects: its caches.

A kind implementing `integrations.framework.referenced_objects.ReadsReferencedObjects`
is bound to this lookup before its job controller is built, so its pure methods read a
TrainJob's runtime (or any other referenced object) from the informer caches, never from
the apiserver. A resource without a cache answers None, like a missing object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.kube.object_meta import make_key
from core.manager.informer_set import Cache
from integrations.framework.job_kind import JobKind, JobResource
from integrations.framework.referenced_objects import ReadsReferencedObjects


class CachedReferences:
    """Referenced objects by resource, namespace and name, from informer caches."""

    def __init__(self, caches: Mapping[JobResource, Cache]) -> None:
        self.caches = caches

    def get(self, resource: JobResource, namespace: str, name: str) -> Mapping[str, Any] | None:
        cache = self.caches.get(resource)
        return None if cache is None else cache.store.get(make_key(namespace or None, name))


def bind_kind(kind: JobKind, lookup: CachedReferences) -> JobKind:
    """The kind as the manager runs it: bound to the caches when it reads references."""
    return kind.bound(lookup) if isinstance(kind, ReadsReferencedObjects) else kind
