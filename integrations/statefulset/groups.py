"""A StatefulSet's one group: its Workload's name, its pod set, and the marks on its Pods,
as upstream v0.19.2's statefulset reconcilers decide them.

- **The Workload** is named `statefulset-<name>-<hash>` (upstream's name for the owner
  `<name>` of kind apps StatefulSet with its UID, or on a MultiKueue worker the origin's
  UID). It is wanted while the StatefulSet is queued (its template was marked by the
  webhook); with zero replicas it is held: kept, on hold, never created.
- **The pod set** `main`: `replicas` Pods of the template's spec with empty metadata (the
  template's metadata only gives a topology request, whose pod index is the Pod's ordinal
  label), env folded.
- **Pod marks**: `managed`, the queue name and WorkloadPriorityClass, the pod group name
  and prebuilt Workload (both the Workload's name), total count `replicas`, fast admission,
  serving, the ordinal label as pod index, role `main`. A Pod marked already keeps its
  marks; a gated one's queue name follows the StatefulSet's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import msgspec

from core.api.multikueue import MULTIKUEUE_ORIGIN_LABEL, MULTIKUEUE_ORIGIN_UID_ANNOTATION
from core.api.workload import PodSet, Workload
from integrations.framework import job_metadata
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.group_workloads import GroupWorkloadName
from integrations.framework.job_metadata import Job, annotations_of, labels_of, metadata, spec
from integrations.framework.labels import (
    IS_GROUP_WORKLOAD_ANNOTATION,
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_ADMISSION_GATE,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_NAME_LABEL,
    POD_GROUP_POD_INDEX_LABEL_ANNOTATION,
    POD_GROUP_SERVING_ANNOTATION,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    POD_ROLE_HASH_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from integrations.framework.topology_request import topology_request_from_template
from integrations.framework.workload_names import workload_name_for_owner
from integrations.statefulset import sts_fields as fields
from integrations.statefulset.webhook import is_queued

MAIN_POD_SET = "main"


def is_remote_copy(statefulset: Job) -> bool:
    """A MultiKueue worker's copy: its Workload is the manager's, never created here."""
    return MULTIKUEUE_ORIGIN_LABEL in labels_of(statefulset)


def owner_uid(statefulset: Job) -> str:
    """The UID the Workload is named with (the origin's on a worker copy)."""
    if is_remote_copy(statefulset):
        origin = annotations_of(statefulset).get(MULTIKUEUE_ORIGIN_UID_ANNOTATION)
        if origin:
            return str(origin)
    return str(metadata(statefulset).get("uid", ""))


def workload_name(statefulset: Job) -> str:
    return workload_name_for_owner(
        owner_name=str(metadata(statefulset).get("name", "")),
        owner_uid=owner_uid(statefulset),
        owner_kind=fields.KIND,
        owner_group=fields.GROUP,
    )


def wanted_groups(statefulset: Job) -> list[GroupWorkloadName]:
    if not is_queued(statefulset):
        return []
    held = fields.replicas(statefulset) <= 0
    return [GroupWorkloadName(workload_name(statefulset), 0, held=held)]


def pod_sets(statefulset: Job) -> list[PodSet]:
    template = job_metadata.section(spec(statefulset), "template")
    # `metadata: {}` as a Go client writes it back: an update of the Workload by one (a
    # deactivation) must not look like a change of its pod sets.
    pod_template = fold_duplicate_env(
        {"metadata": {}, "spec": job_metadata.section(template, "spec")}
    )
    return [
        PodSet(
            name=MAIN_POD_SET,
            template=pod_template,
            count=max(fields.replicas(statefulset), 0),
            topology_request=topology_request_from_template(
                template, pod_index_label=fields.POD_INDEX_LABEL
            ),
        )
    ]


def group_workload(workload: Workload, statefulset: Job, wanted: GroupWorkloadName) -> Workload:
    annotations = {
        **workload.metadata.annotations,
        IS_GROUP_WORKLOAD_ANNOTATION: "true",
        JOB_OWNER_GVK_ANNOTATION: fields.GVK_TEXT,
        JOB_OWNER_NAME_ANNOTATION: str(metadata(statefulset).get("name", "")),
    }
    meta = msgspec.structs.replace(workload.metadata, name=wanted.name, annotations=annotations)
    return msgspec.structs.replace(workload, metadata=meta)


def _gated(pod: Mapping[str, Any]) -> bool:
    gates = spec(pod).get("schedulingGates") or ()
    return any(isinstance(g, Mapping) and g.get("name") == POD_ADMISSION_GATE for g in gates)


def marked_pod(statefulset: Job, pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Pod with its group's marks (see module docstring); None: nothing to change."""
    labels = labels_of(pod)
    queue = job_metadata.queue_name(statefulset)
    name = workload_name(statefulset)
    marked = labels.get(POD_GROUP_NAME_LABEL) == name
    follow_queue = bool(queue) and _gated(pod) and labels.get(QUEUE_NAME_LABEL) != queue
    if (marked and not follow_queue) or not queue:
        return None
    result: dict[str, Any] = copy.deepcopy(dict(pod))
    meta = result.setdefault("metadata", {})
    new_labels = {**labels, QUEUE_NAME_LABEL: queue}
    if not marked:
        new_labels.update(
            {
                MANAGED_LABEL: MANAGED_LABEL_VALUE,
                POD_GROUP_NAME_LABEL: name,
                PREBUILT_WORKLOAD_LABEL: name,
            }
        )
        if priority_class := job_metadata.workload_priority_class_name(statefulset):
            new_labels[PRIORITY_CLASS_LABEL] = priority_class
        meta["annotations"] = {
            **annotations_of(pod),
            POD_GROUP_TOTAL_COUNT_ANNOTATION: str(fields.replicas(statefulset)),
            POD_GROUP_FAST_ADMISSION_ANNOTATION: "true",
            POD_GROUP_SERVING_ANNOTATION: "true",
            POD_GROUP_POD_INDEX_LABEL_ANNOTATION: fields.POD_INDEX_LABEL,
            POD_ROLE_HASH_ANNOTATION: MAIN_POD_SET,
        }
    meta["labels"] = new_labels
    return result
