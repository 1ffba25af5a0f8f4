"""Converting one object to the version asked for, whatever its kind.

Kinds not listed convert by changing `apiVersion` only. The object given is not
modified. A conversion that cannot be done (another group, an unknown version, a
malformed topology assignment) raises `ConversionError` saying which object and why.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from core.adapters.topology_encoding import TopologyAssignmentError
from core.api.conversion import (
    admission_check,
    cluster_queue,
    cohort,
    local_queue,
    multikueue,
    workload,
)
from core.api.conversion.versions import V1BETA1_API_VERSION, V1BETA2_API_VERSION

JsonObject = dict[str, Any]
Step = Callable[[JsonObject], None]

_STEPS: Final[Mapping[str, tuple[Step, Step]]] = {
    "AdmissionCheck": (admission_check.to_v1beta1, admission_check.to_v1beta2),
    "ClusterQueue": (cluster_queue.to_v1beta1, cluster_queue.to_v1beta2),
    "Cohort": (cohort.to_v1beta1, cohort.to_v1beta2),
    "LocalQueue": (local_queue.to_v1beta1, local_queue.to_v1beta2),
    "MultiKueueCluster": (multikueue.cluster_to_v1beta1, multikueue.cluster_to_v1beta2),
    "MultiKueueConfig": (multikueue.config_to_v1beta1, multikueue.config_to_v1beta2),
    "Workload": (workload.to_v1beta1, workload.to_v1beta2),
}
"""Per kind: (v1beta2 -> v1beta1, v1beta1 -> v1beta2)."""

SERVED_API_VERSIONS: Final = (V1BETA1_API_VERSION, V1BETA2_API_VERSION)


class ConversionError(ValueError):
    """An object that cannot be converted to the version asked for."""


def _describe(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
    name = "/".join(str(part) for part in (metadata.get("namespace"), metadata.get("name")) if part)
    return f"{obj.get('kind') or 'object'} {name or '(unnamed)'}"


def convert_object(obj: Mapping[str, Any], desired_api_version: str) -> JsonObject:
    """A copy of `obj` in `desired_api_version` (v1beta1 or v1beta2 of kueue.x-k8s.io)."""
    current = obj.get("apiVersion")
    for version in (current, desired_api_version):
        if version not in SERVED_API_VERSIONS:
            raise ConversionError(
                f"{_describe(obj)}: cannot convert {current!r} to {desired_api_version!r};"
                f" served versions are {', '.join(SERVED_API_VERSIONS)}"
            )
    converted = copy.deepcopy(dict(obj))
    converted["apiVersion"] = desired_api_version
    if current == desired_api_version:
        return converted
    steps = _STEPS.get(str(obj.get("kind")))
    if steps is None:
        return converted
    to_v1beta1, to_v1beta2 = steps
    try:
        (to_v1beta1 if desired_api_version == V1BETA1_API_VERSION else to_v1beta2)(converted)
    except (TopologyAssignmentError, TypeError, ValueError, AttributeError) as error:
        raise ConversionError(f"{_describe(obj)}: {error}") from error
    return converted
