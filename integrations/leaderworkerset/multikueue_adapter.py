"""MultiKueue for LeaderWorkerSets, as upstream v0.19.2's leaderworkerset adapter does it.

A LeaderWorkerSet is queued as one Workload per group, and all of them run on one
worker: the whole LeaderWorkerSet is copied there once, by the first of its Workloads
admitted (the others are then dispatched to that worker only). The copy has the same
name, namespace, labels, annotations and spec, plus the origin label and the manager
LeaderWorkerSet's UID in `kueue.x-k8s.io/multikueue-origin-uid`; it carries no
prebuilt-workload name, since it stands for several Workloads: the worker names its
groups' Workloads from the origin UID (`groups.owner_uid`), so they are the dispatched
copies, and `remote_workload_names` is how the hub tells which Workloads a copy stands
for (upstream's WorkloadKeysFor). No status comes back (upstream neither): the manager's
LeaderWorkerSet controller, if any, owns it.
"""

from __future__ import annotations

from typing import Any

from core.api.multikueue import MULTIKUEUE_ORIGIN_UID_ANNOTATION
from integrations.framework.job_metadata import Job, annotations_of, metadata
from integrations.framework.labels import PREBUILT_WORKLOAD_LABEL
from integrations.framework.multikueue_copy import remote_copy
from integrations.leaderworkerset import lws_fields as fields
from integrations.leaderworkerset.groups import group_workload_name

__all__ = ["remote_leaderworkerset", "remote_workload_names"]


def remote_leaderworkerset(local: Job, *, workload_name: str, origin: str) -> dict[str, Any]:
    """The LeaderWorkerSet to create on the worker for the manager's `local`."""
    body = remote_copy(local, workload_name=workload_name, origin=origin)
    body["metadata"]["labels"].pop(PREBUILT_WORKLOAD_LABEL, None)
    body["apiVersion"] = body["apiVersion"] or f"{fields.GROUP}/{fields.VERSION}"
    body["kind"] = body["kind"] or fields.KIND
    annotations = dict(body["metadata"].get("annotations") or {})
    annotations[MULTIKUEUE_ORIGIN_UID_ANNOTATION] = str(metadata(local).get("uid", ""))
    body["metadata"]["annotations"] = annotations
    return body


def remote_workload_names(remote: Job) -> list[str]:
    """The group Workloads a worker's copy stands for: one per replica, named from the
    origin UID (none without it, or with a replica count out of bounds)."""
    if not annotations_of(remote).get(MULTIKUEUE_ORIGIN_UID_ANNOTATION):
        return []
    replicas = fields.replicas(remote)
    if replicas < 0 or replicas > fields.MAX_REPLICAS:
        return []
    return [group_workload_name(remote, index) for index in range(replicas)]
