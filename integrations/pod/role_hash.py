"""A Pod's role in its group: a short hash of the parts of its spec that shape quota and
placement (upstream's GenerateRoleHash: containers' and init containers' requests,
nodeSelector, affinity, tolerations, runtimeClassName, priority, topology spread,
overhead, resource claims, pod-level requests). Pods of one role share one pod set, named
by the hash. The webhook records it in `kueue.x-k8s.io/role-hash`; the annotation wins."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, annotations_of, section, spec
from integrations.framework.labels import POD_ROLE_HASH_ANNOTATION

ROLE_HASH_ANNOTATION: Final = POD_ROLE_HASH_ANNOTATION


def _containers(items: Any) -> list[dict[str, Any]]:
    return [
        {"resources": {"requests": section(section(c, "resources"), "requests") or None}}
        for c in items or ()
        if isinstance(c, Mapping)
    ]


def generate_role_hash(pod_spec: Mapping[str, Any]) -> str:
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
    text = json.dumps({"spec": shape}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def role_hash(pod: Job) -> str:
    """The recorded role hash, or one computed from the Pod's spec."""
    recorded = annotations_of(pod).get(ROLE_HASH_ANNOTATION)
    return str(recorded) if recorded else generate_role_hash(spec(pod))
