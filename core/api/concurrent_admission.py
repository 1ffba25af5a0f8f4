"""Upstream's marks for concurrent admission (its ConcurrentAdmission gate), one definition.

The parent Workload (a job's own, in a ClusterQueue with a concurrentAdmissionPolicy) is
labelled `kueue.x-k8s.io/concurrent-admission-parent: "true"`; each variant is controlled
by its parent (an owner reference of kind Workload) and names the one flavor it may take
in `kueue.x-k8s.io/workload-allowed-resource-flavors` (a comma-separated list upstream;
its first entry is the variant's flavor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PARENT_LABEL: Final = "kueue.x-k8s.io/concurrent-admission-parent"
PARENT_LABEL_VALUE: Final = "true"
ALLOWED_FLAVORS_ANNOTATION: Final = "kueue.x-k8s.io/workload-allowed-resource-flavors"
WORKLOAD_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
WORKLOAD_KIND: Final = "Workload"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def is_labelled_parent(obj: Mapping[str, Any]) -> bool:
    return (_meta(obj).get("labels") or {}).get(PARENT_LABEL) == PARENT_LABEL_VALUE


def allowed_flavors(obj: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The flavors the annotation allows, in its order; None: no annotation."""
    value = (_meta(obj).get("annotations") or {}).get(ALLOWED_FLAVORS_ANNOTATION)
    if value is None:
        return None
    return tuple(part.strip() for part in str(value).split(",") if part.strip())


def parent_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name, uid) of the Workload owning this one (a variant's parent), or None."""
    for owner in _meta(obj).get("ownerReferences") or ():
        if (
            isinstance(owner, Mapping)
            and owner.get("kind") == WORKLOAD_KIND
            and owner.get("apiVersion") == WORKLOAD_API_VERSION
            and owner.get("name")
        ):
            return str(owner["name"]), str(owner.get("uid") or "")
    return None


def parent_name(obj: Mapping[str, Any]) -> str | None:
    """The name of the Workload owning this one (a variant's parent), or None."""
    ref = parent_ref(obj)
    return ref[0] if ref is not None else None
