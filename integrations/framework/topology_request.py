"""A pod set's topology-aware scheduling request, read from its pod template's annotations.

Users ask for topology placement with annotations on the pod template (required,
preferred or unconstrained level, optional slices and pod-set groups); the Workload
carries them as `podSets[].topologyRequest`. Jobs whose pods have an index (Indexed Jobs)
always pass the index label, so even without annotations the request names it, as
upstream's Workloads do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.api.workload import PodSetTopologyRequest
from integrations.framework.labels import (
    POD_SET_GROUP_NAME_ANNOTATION,
    POD_SET_PREFERRED_TOPOLOGY_ANNOTATION,
    POD_SET_REQUIRED_TOPOLOGY_ANNOTATION,
    POD_SET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
    POD_SET_SLICE_SIZE_ANNOTATION,
    POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
)

__all__ = ["InvalidTopologyRequest", "topology_request_from_template"]

_TRUE = ("1", "t", "T", "true", "TRUE", "True")
_FALSE = ("0", "f", "F", "false", "FALSE", "False")


class InvalidTopologyRequest(ValueError):
    """A topology annotation has a value that cannot be read."""


def _annotations(template: Mapping[str, Any]) -> Mapping[str, str]:
    meta = template.get("metadata")
    found = meta.get("annotations") if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _parse_bool(key: str, text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidTopologyRequest(f'annotation {key}: "{text}" is not a boolean')


def _parse_size(key: str, text: str) -> int:
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits.isascii() or not digits.isdigit() or not -(2**31) <= int(text) < 2**31:
        raise InvalidTopologyRequest(f'annotation {key}: "{text}" is not a 32-bit integer')
    return int(text)


def topology_request_from_template(
    template: Mapping[str, Any],
    *,
    pod_index_label: str | None = None,
    sub_group_index_label: str | None = None,
    sub_group_count: int | None = None,
) -> PodSetTopologyRequest | None:
    """The request the annotations describe; None when they ask for nothing.

    A kind whose pod set spans replicas (a JobSet's replicated job) names the label that
    indexes the replica and how many there are (`sub_group_*`)."""
    annotations = _annotations(template)
    required = annotations.get(POD_SET_REQUIRED_TOPOLOGY_ANNOTATION)
    preferred = annotations.get(POD_SET_PREFERRED_TOPOLOGY_ANNOTATION)
    unconstrained_text = annotations.get(POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION)
    slice_level = annotations.get(POD_SET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION)
    slice_size = annotations.get(POD_SET_SLICE_SIZE_ANNOTATION)
    group_name = annotations.get(POD_SET_GROUP_NAME_ANNOTATION)

    request = PodSetTopologyRequest(
        pod_index_label=pod_index_label,
        sub_group_index_label=sub_group_index_label,
        sub_group_count=sub_group_count,
    )
    # One mode at most, in this order of precedence.
    if required is not None:
        request.required = required
    elif preferred is not None:
        request.preferred = preferred
    elif unconstrained_text is not None:
        request.unconstrained = _parse_bool(
            POD_SET_UNCONSTRAINED_TOPOLOGY_ANNOTATION, unconstrained_text
        )
    elif pod_index_label is None and (slice_level is None or slice_size is None):
        return None

    if slice_level is not None and slice_size is not None:
        request.pod_set_slice_required_topology = slice_level
        request.pod_set_slice_size = _parse_size(POD_SET_SLICE_SIZE_ANNOTATION, slice_size)
    if group_name is not None and (required is not None or preferred is not None):
        request.pod_set_group_name = group_name
    return request
