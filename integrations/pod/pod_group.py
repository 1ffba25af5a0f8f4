"""Pod groups: Pods labelled `kueue.x-k8s.io/pod-group-name` queued as one Workload.

Upstream's rules, with the group as a composed job (`integrations.framework.job_capabilities
.ComposedJobs`): `compose` holds the group's Pods under `members` (oldest first) and takes
the first one's labels and annotations (queue name, priority class, total count). A group
is never deleted as a whole: its Pods going away leave the Workload waiting for
replacements, as upstream.
- **Pod sets**: one per role (`role_hash`), named by the hash, sorted by name, counted from
  the group's active Pods (runnable or succeeded, at most the total count; the others
  are excess). Fewer active than `pod-group-total-count`: the group is not complete
  (`IncompleteJob`) and no Workload is built yet. With
  `kueue.x-k8s.io/pod-group-fast-admission: "true"` one Pod is enough: one pod set of the
  total count, from the first active Pod's role. Which Pods count once the Workload
  exists (failed ones, replacements, excess) is `group_matching`'s.
- **Start**: every gated member is ungated on its role's pod set, all in one reconcile, so
  the group is admitted all at once or not at all; a replacement Pod created later for a
  failed one is ungated as soon as it comes while the Workload stays admitted.
- **Stop**: every started, not terminating member gets `TerminationTarget` and is deleted.
- **Finished** once the total count has succeeded, or, in a group with a
  `retriable-in-group: "false"` Pod, once no member is still running ("Pods succeeded:
  k/n."; upstream reports both as success). A serving group
  (`kueue.x-k8s.io/pod-group-serving: "true"`) never finishes while it exists.
- **Active** while a member runs and is not terminating; **ready** when the total count of
  Pods exist and all are Ready; succeeded Pods of a non-serving group are reclaimable.
- The Workload is named after the group, annotated `kueue.x-k8s.io/is-group-workload`, and
  owned by every member (the first one its controller; later ones are added).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from core.api.meta import OwnerReference
from core.api.resource_flavor import ResourceFlavor
from core.api.validation.workload import has_condition
from core.api.workload import PodSet, ReclaimablePod, Workload
from core.api.workload_conditions import WorkloadConditionType, WorkloadReason
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.job_capabilities import IncompleteJob
from integrations.framework.job_kind import JobFinish, JobSubresource, JobWrite
from integrations.framework.job_metadata import Job, annotations_of, metadata, parse_int, spec
from integrations.framework.json_patch import diff
from integrations.framework.labels import (
    IS_GROUP_WORKLOAD_ANNOTATION,
    POD_GROUP_FAST_ADMISSION_ANNOTATION,
    POD_GROUP_SERVING_ANNOTATION,
)
from integrations.framework.pod_set_info import InvalidPodSetInfo, infos_from_admission
from integrations.pod import admission
from integrations.pod import pod_fields as fields
from integrations.pod.member_order import sort_active
from integrations.pod.role_hash import role_hash

MEMBERS: Final = "members"
FAST_ADMISSION_ANNOTATION: Final = POD_GROUP_FAST_ADMISSION_ANNOTATION


def is_group(job: Job) -> bool:
    return MEMBERS in job


def members(group: Job) -> list[dict[str, Any]]:
    return [m for m in group.get(MEMBERS) or () if isinstance(m, dict)]


def _order(pod: Job) -> tuple[str, str]:
    meta = metadata(pod)
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def compose(namespace: str, name: str, pods: Sequence[Job]) -> dict[str, Any]:
    """The group as one job (see module docstring)."""
    ordered = sorted((copy.deepcopy(dict(p)) for p in pods), key=_order)
    first = metadata(ordered[0])
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": dict(first.get("labels") or {}),
        "annotations": dict(first.get("annotations") or {}),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, MEMBERS: ordered}


def _terminating(pod: Job) -> bool:
    return bool(metadata(pod).get("deletionTimestamp"))


def total_count(group: Job) -> int:
    """`pod-group-total-count` (the webhook refuses anything but a positive integer)."""
    count = parse_int(annotations_of(group).get(fields.GROUP_TOTAL_COUNT_ANNOTATION))
    return count if count is not None and count > 0 else 1


def is_fast_admission(group: Job) -> bool:
    return annotations_of(group).get(FAST_ADMISSION_ANNOTATION) == "true"


def _active(group: Job) -> list[dict[str, Any]]:
    """The runnable or succeeded members, the ones to keep first (group_matching)."""
    return sort_active([p for p in members(group) if fields.is_runnable_or_succeeded(p)])


def _pod_set(pod: Job, name: str, count: int) -> PodSet:
    template = fold_duplicate_env({"spec": copy.deepcopy(dict(spec(pod)))})
    return PodSet(name=name, template=template, count=count)


def group_pod_sets(group: Job) -> list[PodSet]:
    """One pod set per role of the active members (at most the total count); raises
    `IncompleteJob` while fewer than the total count are active (fast admission: none)."""
    total = total_count(group)
    active = _active(group)
    if is_fast_admission(group):
        if not active:
            raise IncompleteJob("no runnable Pod in the group")
        oldest = min(active, key=_order)
        return [_pod_set(oldest, role_hash(oldest), total)]
    if len(active) < total:
        raise IncompleteJob(f"{len(active)} of {total} Pods of the group are runnable")
    roles: dict[str, tuple[Job, int]] = {}
    for pod in sorted(active[:total], key=_order):
        role = role_hash(pod)
        first, count = roles.get(role, (pod, 0))
        roles[role] = (first, count + 1)
    return [_pod_set(pod, role, count) for role, (pod, count) in sorted(roles.items())]


def is_suspended(group: Job) -> bool:
    return any(admission.is_suspended(p) for p in members(group))


def start_group(
    group: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> dict[str, Any]:
    """Every gated member ungated on its role's pod set (a Pod of a role the admission
    lacks: `InvalidPodSetInfo`, as upstream)."""
    infos = {info.name: info for info in infos_from_admission(workload, flavors)}
    started: dict[str, Any] = copy.deepcopy(dict(group))
    out = []
    for pod in members(started):
        if not fields.has_gate(pod):
            out.append(pod)
            continue
        info = infos.get(role_hash(pod))
        if info is None:
            raise InvalidPodSetInfo(f"no pod set of the admission is role {role_hash(pod)}")
        out.append(admission.ungated(pod, info))
    started[MEMBERS] = out
    return started


def plan_stop(group: Job, message: str = "Stopped by Kueue") -> list[JobWrite]:
    """Every started member marked for termination (the job controller deletes them)."""
    after: dict[str, Any] = copy.deepcopy(dict(group))
    after[MEMBERS] = [
        admission.marked_for_termination(p, message) if admission.needs_stop(p) else p
        for p in members(group)
    ]
    if after[MEMBERS] == members(group):
        return []
    return [JobWrite(JobSubresource.STATUS, diff(group, after), after)]


def is_serving(group: Job) -> bool:
    return annotations_of(group).get(POD_GROUP_SERVING_ANNOTATION) == "true"


def group_finished(group: Job) -> JobFinish | None:
    if is_serving(group):
        return None
    pods = members(group)
    total = total_count(group)
    succeeded = sum(fields.phase(p) == fields.SUCCEEDED for p in pods)
    active = any(not fields.is_terminated(p) for p in pods)
    unretriable = any(
        annotations_of(p).get(fields.RETRIABLE_IN_GROUP_ANNOTATION) == "false" for p in pods
    )
    if succeeded >= total or (not active and unretriable):
        return JobFinish(WorkloadReason.SUCCEEDED, f"Pods succeeded: {succeeded}/{total}.")
    return None


def is_active(group: Job) -> bool:
    return any(fields.phase(p) == "Running" and not _terminating(p) for p in members(group))


def pods_ready(group: Job) -> bool:
    pods = members(group)
    return len(pods) >= total_count(group) and all(fields.condition_true(p, "Ready") for p in pods)


def reclaimable_pods(group: Job) -> list[ReclaimablePod]:
    if is_serving(group):
        return []
    counts: dict[str, int] = {}
    for pod in members(group):
        if fields.phase(pod) == fields.SUCCEEDED:
            counts[role_hash(pod)] = counts.get(role_hash(pod), 0) + 1
    return [ReclaimablePod(name=name, count=count) for name, count in counts.items()]


def group_workload(workload: Workload, group: Job) -> Workload:
    """Named after the group, marked a group Workload, owned by every member."""
    owners = [owner_reference(p, controller=i == 0) for i, p in enumerate(members(group))]
    meta = msgspec.structs.replace(
        workload.metadata,
        name=str(metadata(group).get("name", "")),
        annotations={**workload.metadata.annotations, IS_GROUP_WORKLOAD_ANNOTATION: "true"},
        owner_references=owners,
    )
    return msgspec.structs.replace(workload, metadata=meta)


def group_of_workload(workload: Mapping[str, Any]) -> str | None:
    meta = metadata(workload)
    annotations = meta.get("annotations") or {}
    if annotations.get(IS_GROUP_WORKLOAD_ANNOTATION) != "true":
        return None
    return str(meta.get("name") or "") or None


def matches_prebuilt_workload(group: Job, workload: Workload) -> bool:
    """Upstream's pod-group comparison with a Workload built elsewhere: named after the
    group, and each role of its active Pods not being deleted (at most the total count;
    a prebuilt group's deleted Pods go at once, their successors may already be there)
    is a pod set of it with at least as many Pods (a finished Workload only needs the
    roles)."""
    if workload.metadata.name != str(metadata(group).get("name", "")):
        return False
    staying = [p for p in _active(group) if not _terminating(p)]
    return roles_fit(workload, staying[: total_count(group)])


def owner_reference(pod: Job, *, controller: bool = False) -> OwnerReference:
    return OwnerReference(
        api_version="v1",
        kind=fields.POD_KIND,
        name=str(metadata(pod).get("name", "")),
        uid=str(metadata(pod).get("uid", "")),
        controller=controller,
        block_owner_deletion=True,
    )


def _role_counts(pods: Sequence[Job]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pod in pods:
        if fields.is_runnable_or_succeeded(pod):
            counts[role_hash(pod)] = counts.get(role_hash(pod), 0) + 1
    return counts


def roles_fit(workload: Workload, pods: Sequence[Job]) -> bool:
    """Every role of the active `pods` is a pod set of `workload`, at least as large (a
    finished Workload only needs the roles): upstream's equivalentToWorkload."""
    finished = has_condition(workload, WorkloadConditionType.FINISHED)
    sizes = {pod_set.name: pod_set.count for pod_set in workload.spec.pod_sets}
    return all(
        role in sizes and (finished or sizes[role] >= count)
        for role, count in _role_counts(pods).items()
    )
