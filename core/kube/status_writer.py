"""Status writes guarded by resourceVersion, so a decision made on stale data never lands.

The caller hands over the object it decided on (usually from an informer cache) and a
`compute` function: current object -> status change, or None when nothing needs writing.
The change is sent as a merge patch of the `status` subresource that also carries the
object's `metadata.resourceVersion`; the apiserver applies it only if the object is still
at that version. If someone else wrote first (409 Conflict), the object is read fresh and
`compute` runs again on it: the caller re-decides on the new state (which may well be "no
longer needed", e.g. the workload was admitted meanwhile). Nothing is ever written blindly,
which is what keeps two schedulers, or one scheduler with a stale cache, from admitting a
workload twice.

`compute` returns a merge patch for `status`: a dict (None deletes a field), or a typed
struct. A struct is encoded without fields at their defaults, so it cannot set a field
back to its default (0, "", []) or delete one: return a dict for that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from core.api.api_struct import ApiStruct
from core.api.codec import to_builtins
from core.kube.client import KubeClient, PatchType
from core.kube.errors import Conflict
from core.kube.object_meta import name_of, namespace_of, resource_version_of
from core.kube.resources import ResourceRef

T = TypeVar("T")

StatusChange = Mapping[str, Any] | ApiStruct
ComputeStatus = Callable[[T], StatusChange | None]

DEFAULT_MAX_ATTEMPTS = 5


class StatusWriteGaveUp(Conflict):
    """Every attempt lost a race; the object is too contended (or compute never converges)."""


@dataclass(frozen=True, slots=True)
class StatusWriteResult(Generic[T]):
    """The object after the write (or as last read, if nothing was written)."""

    object: T
    written: bool
    attempts: int
    conflicts: int


def status_patch(resource_version: str, change: StatusChange) -> dict[str, Any]:
    """The merge-patch body: the change under `status`, conditioned on `resource_version`."""
    status = to_builtins(change) if isinstance(change, ApiStruct) else dict(change)
    return {"metadata": {"resourceVersion": resource_version}, "status": status}


async def write_status(
    client: KubeClient,
    resource: ResourceRef,
    current: T,
    compute: ComputeStatus[T],
    *,
    into: type[T],
    field_manager: str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> StatusWriteResult[T]:
    """Compute and write a status change on `current`, re-reading and recomputing on conflict.

    Raises `NotFound` when the object is gone and `StatusWriteGaveUp` after `max_attempts`
    conflicts in a row.
    """
    name = name_of(current)
    namespace = namespace_of(current) or None
    log = client.log.bind(resource=resource.plural, key=f"{namespace or ''}/{name}")
    conflicts = 0
    for attempt in range(1, max_attempts + 1):
        change = compute(current)
        if change is None:
            return StatusWriteResult(current, False, attempt, conflicts)
        version = resource_version_of(current)
        if not version:
            raise ValueError(f"{name}: cannot write status without a resourceVersion to guard it")
        try:
            updated = await client.patch(
                resource,
                name,
                status_patch(version, change),
                patch_type=PatchType.MERGE,
                namespace=namespace,
                subresource="status",
                field_manager=field_manager,
                into=into,
            )
        except Conflict:
            conflicts += 1
            log.debug("status.conflict", attempt=attempt, resource_version=version)
            current = await client.get(resource, name, namespace=namespace, into=into)
            continue
        return StatusWriteResult(updated, True, attempt, conflicts)
    raise StatusWriteGaveUp(
        409,
        "Conflict",
        f"status of {namespace or ''}/{name} lost {conflicts} races in a row; giving up",
        method="PATCH",
        path=resource.plural,
    )
