"""Which Pods of a group count for its Workload, as upstream's pod-group matching decides.

A group outlives its Pods: a member fails, a replacement (a new Pod with the same group
label) comes, someone creates one too many. Upstream's rules, per pod set (role) of the
Workload:
- the *active* Pods of the role (runnable or succeeded: `is_runnable_or_succeeded`) count
  up to the pod set's size; beyond it the newest, gated, finalizer-less ones are
  **excess**: their finalizer comes off and they are deleted;
- *inactive* ones (failed, or deleted before placed on a node) are kept while the role misses
  Pods; those a replacement stands in for (active + inactive beyond the size) are
  **released**: their finalizer comes off, the oldest-failed first;
- Pods the pod set counts but no active Pod fills are **absent**: the Workload is then
  `WaitingForReplacementPods` (with fast admission: only a role with no active Pod at
  all counts, as one);
- the Workload still stands for the group (upstream's equivalentToWorkload) when some
  Pod is kept and every role of the kept active Pods is a pod set of it, at least as
  large (a finished Workload only needs the roles).
Without a Workload yet, one is built from the group's active Pods once there are the
total count of them (fast admission: one); the extra active ones are excess, and every
inactive one is released at once (upstream finalizes them before building).
Pods of a role the Workload does not have are not kept (never started). Members (failed
ones aside) that disagree on the queue name or total count make no Workload: the
problem is reported instead (upstream's ErrWorkloadCompose).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.api.meta import OwnerReference
from core.api.workload import Workload
from integrations.framework.job_capabilities import ComposedMatch
from integrations.framework.job_metadata import (
    Job,
    annotations_of,
    maximum_execution_time_seconds,
    metadata,
    queue_name,
)
from integrations.pod import pod_fields as fields
from integrations.pod.member_order import sort_active, sort_inactive
from integrations.pod.pod_group import (
    is_fast_admission,
    members,
    owner_reference,
    roles_fit,
    total_count,
)
from integrations.pod.role_hash import role_hash


def _split(group: Job) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pods = members(group)
    active = [p for p in pods if fields.is_runnable_or_succeeded(p)]
    return active, [p for p in pods if not fields.is_runnable_or_succeeded(p)]


def match_group(group: Job, workload: Workload | None) -> ComposedMatch:
    """The group against its Workload, or (None) against the one to build (see module
    docstring); without a Workload, `equivalent` says whether one can be built."""
    active, inactive = _split(group)
    if workload is None:
        return _for_creation(group, active, inactive)
    if workload.spec.maximum_execution_time_seconds != maximum_execution_time_seconds(group):
        return ComposedMatch(equivalent=False)
    fast = is_fast_admission(group)
    kept: list[dict[str, Any]] = []
    excess: list[dict[str, Any]] = []
    released: list[dict[str, Any]] = []
    absent = 0
    for pod_set in workload.spec.pod_sets:
        role_active = sort_active([p for p in active if role_hash(p) == pod_set.name])
        role_inactive = sort_inactive([p for p in inactive if role_hash(p) == pod_set.name])
        if fast:
            absent += 1 if pod_set.count > 0 and not role_active else 0
        else:
            absent += max(0, pod_set.count - len(role_active))
        kept += role_active[: pod_set.count]
        excess += role_active[pod_set.count :]
        replaced = min(len(role_inactive), len(role_inactive) + len(role_active) - pod_set.count)
        keep_inactive = len(role_inactive) - max(0, replaced)
        kept += role_inactive[:keep_inactive]
        released += role_inactive[keep_inactive:]
    if not kept or not roles_fit(workload, kept):
        return ComposedMatch(equivalent=False)
    return ComposedMatch(
        equivalent=True,
        kept=tuple(kept),
        excess=tuple(excess),
        released=tuple(released),
        absent=absent,
        new_owners=missing_owners(workload, kept),
    )


def _for_creation(
    group: Job, active: list[dict[str, Any]], inactive: list[dict[str, Any]]
) -> ComposedMatch:
    total = total_count(group)
    enough = bool(active) if is_fast_admission(group) else len(active) >= total
    ordered = sort_active(active)
    problem = _disagreement(group) if enough else None
    return ComposedMatch(
        equivalent=enough and problem is None,
        kept=tuple(ordered[:total]),
        excess=tuple(ordered[total:]) if enough and problem is None else (),
        released=tuple(inactive),
        problem=problem,
    )


def _total_count_text(pod: Job) -> str | None:
    value = annotations_of(pod).get(fields.GROUP_TOTAL_COUNT_ANNOTATION)
    return None if value is None else str(value)


def _disagreement(group: Job) -> str | None:
    """Members (failed ones aside) naming another queue or total count than the first
    (upstream's validatePodGroupMetadata)."""
    first, *others = members(group)
    for pod in others:
        if fields.phase(pod) == fields.FAILED:
            continue
        for what, read in (("queue names", queue_name), ("total counts", _total_count_text)):
            mine, theirs = read(first), read(pod)
            if mine != theirs:
                names = f"'{metadata(first).get('name')}' and '{metadata(pod).get('name')}'"
                return f"Pods {names} of the group have different {what}: {mine} != {theirs}"
    return None


def missing_owners(workload: Workload, pods: Sequence[Job]) -> tuple[OwnerReference, ...]:
    """Owner references for the `pods` not owning the Workload yet (replacements): every
    member owns its group's Workload, as upstream's EnsureWorkloadOwnedByAllMembers."""
    have = {ref.uid for ref in workload.metadata.owner_references}
    return tuple(owner_reference(p) for p in pods if str(metadata(p).get("uid", "")) not in have)
