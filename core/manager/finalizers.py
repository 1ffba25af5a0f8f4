"""Adding and removing one finalizer, as a write guarded by the object's resourceVersion.

A finalizer write is a merge patch carrying the whole new `metadata.finalizers` list and
the resourceVersion it was computed from, so a concurrent change to the list (another
controller adding its own finalizer) makes the write fail with Conflict instead of being
overwritten; the caller re-reads its cache and tries again.
"""

from __future__ import annotations

from typing import Any

from core.api.json_types import Json
from core.kube.client import KubeClient, PatchType
from core.kube.errors import NotFound
from core.kube.object_meta import name_of, namespace_of, resource_version_of
from core.kube.resources import ResourceRef


def finalizers_of(obj: Json) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


def is_deleting(obj: Json) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def finalizer_patch(obj: Json, finalizer: str, *, present: bool) -> dict[str, Any] | None:
    """The merge patch that adds (`present`) or removes `finalizer`; None if already so."""
    current = finalizers_of(obj)
    if (finalizer in current) == present:
        return None
    wanted = [*current, finalizer] if present else [f for f in current if f != finalizer]
    return {"metadata": {"resourceVersion": resource_version_of(obj), "finalizers": wanted or None}}


async def set_finalizer(
    client: KubeClient,
    resource: ResourceRef,
    obj: Json,
    finalizer: str,
    *,
    present: bool,
    field_manager: str,
) -> dict[str, Any] | None:
    """Write the finalizer change, if any; returns the updated object (None: nothing done).

    Raises Conflict when the object changed since `obj` was read; a vanished object is
    not an error (its finalizers no longer matter).
    """
    patch = finalizer_patch(obj, finalizer, present=present)
    if patch is None:
        return None
    try:
        updated: dict[str, Any] = await client.patch(
            resource,
            name_of(obj),
            patch,
            patch_type=PatchType.MERGE,
            namespace=namespace_of(obj) or None,
            field_manager=field_manager,
        )
    except NotFound:
        return None
    return updated
