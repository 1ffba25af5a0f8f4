"""MultiKueue for StatefulSets, as upstream v0.19.2's statefulset adapter does it.

The whole StatefulSet is copied to the worker that admitted its one group Workload: same
name, namespace, labels, annotations and spec, plus the origin label, the
prebuilt-workload name (the manager's Workload, whose copy the worker already holds) and
the manager StatefulSet's UID in `kueue.x-k8s.io/multikueue-origin-uid` (the worker names
the group's Workload from it, so it is the dispatched one: `groups.owner_uid`). The
worker's StatefulSet controller makes the Pods there, its Kueue admits them as the
group; on the manager no Pod runs (any the manager makes stay gated).

No status comes back (upstream neither): a StatefulSet has no managedBy, so the
manager's own StatefulSet controller owns its status and would overwrite a copy.
"""

from __future__ import annotations

from typing import Any

from core.api.multikueue import MULTIKUEUE_ORIGIN_UID_ANNOTATION
from integrations.framework.job_metadata import Job, metadata
from integrations.framework.multikueue_copy import remote_copy
from integrations.statefulset import sts_fields as fields

__all__ = ["remote_statefulset"]


def remote_statefulset(local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
    """The StatefulSet to create on the worker for the manager's `local`."""
    body = remote_copy(local, workload_name=workload_name, origin=origin)
    body["apiVersion"] = body["apiVersion"] or fields.API_VERSION
    body["kind"] = body["kind"] or fields.KIND
    annotations = dict(body["metadata"].get("annotations") or {})
    annotations[MULTIKUEUE_ORIGIN_UID_ANNOTATION] = str(metadata(local).get("uid", ""))
    body["metadata"]["annotations"] = annotations
    return body
