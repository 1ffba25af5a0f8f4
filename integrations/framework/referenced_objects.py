"""Kinds whose pod sets depend on other objects: `ReadsReferencedObjects`.

A batch Job or a JobSet carries its pod templates; some kinds do not. A Kubeflow TrainJob
names a (Cluster)TrainingRuntime whose JobSet template its pods come from, so its pod
sets, pods-ready and reclaimable pods cannot be answered from the job alone. Such a kind
says which resources it reads (`referenced_resources`) and gives the machinery a copy of
itself that reads them through an `ObjectLookup` (`bound`). The manager keeps an informer
per referenced resource, answers the lookup from those caches (so the kind's methods
stay synchronous and free of I/O) and reconciles the kind's jobs again when a referenced
object appears or changes. A kind without references implements none of this.

Where the machinery has no lookup (the webhook server, MultiKueue's remote copy), the
kind is used unbound: methods that need a referenced object raise
`MissingReferencedObject`, which the job controller retries like any failed reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from integrations.framework.job_kind import JobKind, JobResource


class MissingReferencedObject(LookupError):
    """An object the job names is not there (yet); the message says which and what to do."""


class ObjectLookup(Protocol):
    """Read access to the objects of the resources a kind references (from a cache)."""

    def get(self, resource: JobResource, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The object, or None; `namespace` is "" for a cluster-scoped resource."""
        ...


@runtime_checkable
class ReadsReferencedObjects(Protocol):
    """A kind whose answers depend on objects its jobs reference (see module docstring)."""

    @property
    def referenced_resources(self) -> tuple[JobResource, ...]:
        """Resources the kind reads (the manager watches them and needs get/list/watch)."""
        ...

    def bound(self, lookup: ObjectLookup) -> JobKind:
        """The kind reading referenced objects through `lookup`."""
        ...


def referenced_resources(kind: object) -> tuple[JobResource, ...]:
    """What a kind's jobs reference; () for a kind that reads nothing beyond its jobs."""
    return kind.referenced_resources if isinstance(kind, ReadsReferencedObjects) else ()
