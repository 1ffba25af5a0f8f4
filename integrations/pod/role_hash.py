"""A Pod's role in its group: a short hash of the parts of its spec that shape quota and
placement (upstream's GenerateRoleHash over `framework.pod_spec_shape`). Pods of one
role share one pod set, named by the hash. The webhook records it in
`kueue.x-k8s.io/role-hash`; the annotation wins."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, annotations_of, spec
from integrations.framework.labels import POD_ROLE_HASH_ANNOTATION
from integrations.framework.pod_spec_shape import pod_spec_shape

ROLE_HASH_ANNOTATION: Final = POD_ROLE_HASH_ANNOTATION


def generate_role_hash(pod_spec: Mapping[str, Any]) -> str:
    text = json.dumps({"spec": pod_spec_shape(pod_spec)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def role_hash(pod: Job) -> str:
    """The recorded role hash, or one computed from the Pod's spec."""
    recorded = annotations_of(pod).get(ROLE_HASH_ANNOTATION)
    return str(recorded) if recorded else generate_role_hash(spec(pod))
