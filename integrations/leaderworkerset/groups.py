"""A LeaderWorkerSet's groups: which Workloads it wants, and the marks on each group's Pods,
as upstream's leaderworkerset reconciler decides them.

- **Wanted groups**: one per replica index `0 … replicas-1`, named
  `leaderworkerset-<name>-<index>-<hash>` (upstream's name for the owner `<name>-<index>`
  with the LeaderWorkerSet's UID, or on a MultiKueue worker the origin's UID, so the
  copy's groups match the manager's). During a rolling update with maxSurge the surge
  groups (status.replicas beyond spec.replicas) are wanted too. Only a LeaderWorkerSet
  whose templates the webhook marked is queued at all.
- **The group Workload**: annotated as a pod group's Workload, with the job owner's GVK,
  name and the group index (upstream's component index).
- **Pod marks**, once the LWS controller gave a Pod its group index: `managed`, the
  queue name (gated Pods only: a started Pod's queue cannot change), the pod group name and
  the prebuilt Workload (both the group's Workload name), the total count `size` and the
  role hash naming its pod set: `leader` (no leader-name annotation), `worker`, or `main`
  without a leader template. A Pod marked before keeps its marks; only a gated one's
  queue name follows the LeaderWorkerSet's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import msgspec

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION
from core.api.workload import Workload
from integrations.framework import job_metadata
from integrations.framework.group_workloads import GroupWorkloadName
from integrations.framework.job_metadata import Job, annotations_of, labels_of, metadata, spec
from integrations.framework.labels import (
    COMPONENT_WORKLOAD_INDEX_ANNOTATION,
    IS_GROUP_WORKLOAD_ANNOTATION,
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_ADMISSION_GATE,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_ROLE_HASH_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.workload_names import workload_name_for_owner
from integrations.leaderworkerset import lws_fields as fields
from integrations.leaderworkerset.pod_sets import LEADER_POD_SET, MAIN_POD_SET, WORKER_POD_SET
from integrations.leaderworkerset.webhook import is_queued

GVK_TEXT = f"{fields.GROUP}/{fields.VERSION}, Kind={fields.KIND}"
"""How upstream prints the owner's GroupVersionKind in the job-owner-gvk annotation."""


def is_remote_copy(lws: Job) -> bool:
    """A MultiKueue worker's copy: its Workloads are the manager's, never created here."""
    return MULTIKUEUE_ORIGIN_LABEL in labels_of(lws)


def owner_uid(lws: Job) -> str:
    """The UID the group Workloads are named with (the origin's on a worker copy)."""
    if is_remote_copy(lws):
        origin = annotations_of(lws).get(MULTIKUEUE_ORIGIN_UID_ANNOTATION)
        if origin:
            return str(origin)
    return str(metadata(lws).get("uid", ""))


def group_workload_name(lws: Job, index: int | str) -> str:
    return workload_name_for_owner(
        owner_name=f"{metadata(lws).get('name', '')}-{index}",
        owner_uid=owner_uid(lws),
        owner_kind=fields.KIND,
        owner_group=fields.GROUP,
    )


def lws_of_pod(pod: Mapping[str, Any]) -> str | None:
    """The LeaderWorkerSet a Pod belongs to: its name label."""
    name = labels_of(pod).get(fields.SET_NAME_LABEL)
    return str(name) if name else None


def _surging(lws: Job) -> bool:
    return fields.max_surge(lws) > 0 and fields.updated_replicas(lws) < fields.replicas(lws)


def wanted_groups(lws: Job) -> list[GroupWorkloadName]:
    if not is_queued(lws):
        return []
    count = fields.replicas(lws)
    if fields.status_replicas(lws) > count and _surging(lws):
        count = fields.status_replicas(lws)
    return [GroupWorkloadName(group_workload_name(lws, i), i) for i in range(max(count, 0))]


def group_workload(workload: Workload, lws: Job, wanted: GroupWorkloadName) -> Workload:
    annotations = {
        **workload.metadata.annotations,
        IS_GROUP_WORKLOAD_ANNOTATION: "true",
        JOB_OWNER_GVK_ANNOTATION: GVK_TEXT,
        JOB_OWNER_NAME_ANNOTATION: str(metadata(lws).get("name", "")),
        COMPONENT_WORKLOAD_INDEX_ANNOTATION: str(wanted.index),
    }
    meta = msgspec.structs.replace(workload.metadata, name=wanted.name, annotations=annotations)
    return msgspec.structs.replace(workload, metadata=meta)


def _gated(pod: Mapping[str, Any]) -> bool:
    gates = spec(pod).get("schedulingGates") or ()
    return any(isinstance(g, Mapping) and g.get("name") == POD_ADMISSION_GATE for g in gates)


def _role(lws: Job, pod: Mapping[str, Any]) -> str:
    if fields.leader_template(lws) is None:
        return MAIN_POD_SET
    if fields.LEADER_NAME_ANNOTATION in annotations_of(pod):
        return WORKER_POD_SET
    return LEADER_POD_SET


def marked_pod(lws: Job, pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Pod with its group's marks (see module docstring); None: nothing to change."""
    labels = labels_of(pod)
    queue = job_metadata.queue_name(lws)
    follow_queue = bool(queue) and _gated(pod) and labels.get(QUEUE_NAME_LABEL) != queue
    if MANAGED_LABEL in labels and not follow_queue:
        return None
    index = labels.get(fields.GROUP_INDEX_LABEL)
    if MANAGED_LABEL not in labels and index is None:
        return None  # the LWS controller has not indexed it yet
    result: dict[str, Any] = copy.deepcopy(dict(pod))
    meta = result.setdefault("metadata", {})
    new_labels = dict(meta.get("labels") or {})
    if follow_queue:
        new_labels[QUEUE_NAME_LABEL] = queue
    if MANAGED_LABEL not in labels:
        name = group_workload_name(lws, str(index))
        new_labels[MANAGED_LABEL] = MANAGED_LABEL_VALUE
        new_labels[POD_GROUP_NAME_LABEL] = name
        new_labels[PREBUILT_WORKLOAD_LABEL] = name
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            POD_GROUP_TOTAL_COUNT_ANNOTATION: str(fields.size(lws)),
            POD_ROLE_HASH_ANNOTATION: _role(lws, pod),
        }
    meta["labels"] = new_labels
    return result
