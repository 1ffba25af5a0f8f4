"""The shape of a pod spec: the parts that decide its quota and placement.

Upstream reads the same fields in two places: a Pod's role in its group is a hash of
them (its GenerateRoleHash), and a queued serving workload may not change them in its
pod templates while it is queued (its ValidateImmutablePodGroupPodSpec), since the
Workload's pod sets would no longer say what the pods need. Images, commands and
everything else stay free to change (a LeaderWorkerSet's rolling update).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.validation.field_errors import FieldError, FieldPath
from integrations.framework import job_validation
from integrations.framework.job_metadata import section

__all__ = ["immutable_pod_spec_shape", "pod_spec_shape"]


def _containers(items: Any) -> list[dict[str, Any]]:
    return [
        {"resources": {"requests": section(section(c, "resources"), "requests") or None}}
        for c in items or ()
        if isinstance(c, Mapping)
    ]


def pod_spec_shape(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """Containers' and init containers' requests, nodeSelector, affinity, tolerations,
    runtimeClassName, priority, topology spread, overhead, resource claims and pod-level
    requests (absent ones as None)."""
    shape: dict[str, Any] = {
        "initContainers": _containers(pod_spec.get("initContainers")) or None,
        "containers": _containers(pod_spec.get("containers")) or None,
        "nodeSelector": pod_spec.get("nodeSelector"),
        "affinity": pod_spec.get("affinity"),
        "tolerations": pod_spec.get("tolerations"),
        "runtimeClassName": pod_spec.get("runtimeClassName"),
        "priority": pod_spec.get("priority"),
        "topologySpreadConstraints": pod_spec.get("topologySpreadConstraints"),
        "overhead": pod_spec.get("overhead"),
        "resourceClaims": pod_spec.get("resourceClaims"),
    }
    if isinstance(pod_spec.get("resources"), Mapping):
        shape["resources"] = section(pod_spec["resources"], "requests")
    return shape


def immutable_pod_spec_shape(
    new_spec: Mapping[str, Any], old_spec: Mapping[str, Any], path: FieldPath
) -> list[FieldError]:
    """An error per part of the shape that differs (`path` is the pod spec's)."""
    new_shape, old_shape = pod_spec_shape(new_spec), pod_spec_shape(old_spec)
    errors: list[FieldError] = []
    for key in sorted(set(new_shape) | set(old_shape)):
        errors += job_validation.immutable(path.child(key), new_shape.get(key), old_shape.get(key))
    return errors
