"""Reading a StatefulSet kept as a plain dict: its replicas (default 1) and the names the
StatefulSet controller writes on its Pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, controller_owner, int_value, spec, status

GROUP: Final = "apps"
VERSION: Final = "v1"
KIND: Final = "StatefulSet"
API_VERSION: Final = f"{GROUP}/{VERSION}"
GVK_TEXT: Final = f"{API_VERSION}, Kind={KIND}"
"""How upstream prints the owner's GroupVersionKind in the job-owner-gvk annotation."""
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
"""On each of its Pods: the Pod's ordinal."""


def replicas(statefulset: Job) -> int:
    value = int_value(spec(statefulset).get("replicas"))
    return 1 if value is None else value


def status_replicas(statefulset: Job) -> int:
    return int_value(status(statefulset).get("replicas")) or 0


def statefulset_of_pod(pod: Mapping[str, Any]) -> str | None:
    """The StatefulSet controlling a Pod (its controller ownerReference), if one does."""
    owner = controller_owner(pod)
    if owner is None or owner.get("kind") != KIND or owner.get("apiVersion") != API_VERSION:
        return None
    name = owner.get("name")
    return str(name) if name else None
