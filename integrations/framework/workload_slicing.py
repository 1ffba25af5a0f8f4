"""Elastic jobs: which Workload slice stands for a resized job, and what to write.

Upstream's ElasticJobsViaWorkloadSlices (Beta, on by default in v0.19): a job annotated
`kueue.x-k8s.io/elastic-job: "true"` of a kind that `ResizesInSlices` may change its pod
counts while admitted. The job's not-finished Workloads are its slices, oldest first:
- one slice whose counts equal the job's: it is the job's Workload;
- counts lowered, or the slice holds no quota yet: the slice's counts are updated in
  place (the engine then holds only what it counts: quota released);
- counts raised on a slice with quota: a new slice is created (named after the job's
  generation) that names the old one in `kueue.x-k8s.io/workload-slice-replacement-for`;
  the engine admits it with the old slice's usage counted as its own and finishes the old
  one (WorkloadSliceReplaced), while the job's pods keep running;
- several slices (a replacement pending, or leftovers of a crash): the pending
  replacement of the newest slice with quota is driven, that slice is kept until the
  replacement is admitted, and every other one is finished (WorkloadSliceReplaced when a
  slice replaces it, else OutOfSync).
A job whose pod set names no longer match its slice's is not resized: the ordinary
rules (`workload_matching`) apply to it. Everything here is pure; the job controller
writes the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from core.api.validation.workload import has_condition, quota_reserved
from core.api.workload import PodSet, Workload
from core.api.workload_conditions import WorkloadConditionType, WorkloadReason
from core.api.workload_slices import (
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_ENABLED,
    OUT_OF_SYNC_MESSAGE,
    REPLACED_MESSAGE,
    REPLACEMENT_FOR_ANNOTATION,
    SLICE_NAME_ANNOTATION,
    elastic,
)
from integrations.framework import job_metadata
from integrations.framework.job_capabilities import resizes_in_slices
from integrations.framework.job_kind import JobKind
from integrations.framework.job_metadata import Job
from integrations.framework.workload_names import (
    SHORT_MAX_WORKLOAD_NAME_LENGTH,
    workload_name_for_owner,
)

__all__ = [
    "OUT_OF_SYNC_MESSAGE",
    "REPLACED_MESSAGE",
    "SlicePlan",
    "as_slice",
    "plan_slices",
    "slices_enabled",
]


def slices_enabled(kind: JobKind, job: Job, gate: bool) -> bool:
    """Upstream's WorkloadSliceEnabled: the gate is on, the kind resizes in slices and
    the job opted in."""
    return gate and resizes_in_slices(kind) and elastic(job)


def _key(workload: Workload) -> str:
    return f"{workload.metadata.namespace}/{workload.metadata.name}"


def _counts(pod_sets: Sequence[PodSet]) -> dict[str, int]:
    return {pod_set.name: pod_set.count for pod_set in pod_sets}


def _evicted(workload: Workload) -> bool:
    return has_condition(workload, WorkloadConditionType.EVICTED)


Finish = tuple[Workload, WorkloadReason, str]
"""A slice to finish, the reason and the message."""


@dataclass(frozen=True, slots=True)
class SlicePlan:
    """What the job controller does for an elastic job's slices."""

    compatible: bool = True
    """False: the job's pod sets no longer match its slices; ordinary rules apply."""
    drive: Workload | None = None
    """The slice the job is reconciled against (None: nothing to drive yet)."""
    resize: dict[str, int] | None = None
    """New pod counts to write into `drive`'s spec (in place), then wait for it."""
    create_replacing: Workload | None = None
    """Create a new slice replacing this one (a scale-up of a slice holding quota)."""
    create_first: bool = False
    """No slice yet: create the job's first one."""
    finish: list[Finish] = field(default_factory=list)
    """Slices to finish (reason, message) before anything else."""


def _select(active: Sequence[Workload]) -> tuple[Workload | None, list[Finish]]:
    """Upstream's normalizeActiveSlices: the slice to drive, and those to finish."""
    replacements: dict[str, Workload] = {}
    for workload in active:
        replaced = workload.metadata.annotations.get(REPLACEMENT_FOR_ANNOTATION)
        if replaced and not _evicted(workload):
            known = replacements.get(replaced)
            if known is None or (not quota_reserved(known) and quota_reserved(workload)):
                replacements[replaced] = workload
    latest_reserved: Workload | None = None
    latest_not_evicted: Workload | None = None
    for workload in active:
        if _evicted(workload):
            continue
        latest_not_evicted = workload
        if not quota_reserved(workload):
            continue
        replacement = replacements.get(_key(workload))
        if replacement is not None and quota_reserved(replacement):
            continue
        latest_reserved = workload
    pending: Workload | None = None
    if latest_reserved is not None:
        replacement = replacements.get(_key(latest_reserved))
        if replacement is not None and not quota_reserved(replacement):
            pending = replacement
    selected = pending or latest_reserved or latest_not_evicted
    keep = {_key(w) for w in (selected, latest_reserved) if w is not None}
    finish = []
    for workload in active:
        if _key(workload) in keep:
            continue
        if _key(workload) in replacements:
            finish.append((workload, WorkloadReason.WORKLOAD_SLICE_REPLACED, REPLACED_MESSAGE))
        else:
            finish.append((workload, WorkloadReason.OUT_OF_SYNC, OUT_OF_SYNC_MESSAGE))
    return selected, finish


def plan_slices(kind: JobKind, job: Job, active: Sequence[Workload]) -> SlicePlan:
    """The plan for `job` and its not-finished Workloads `active` (oldest first)."""
    if not active:
        return SlicePlan(create_first=True)
    selected: Workload | None = active[0]
    finish: list[Finish] = []
    if len(active) > 1:
        selected, finish = _select(active)
    if selected is None:
        return SlicePlan(finish=finish)
    wanted = _counts(kind.pod_sets(job))
    have = _counts(selected.spec.pod_sets)
    if set(wanted) != set(have):
        return SlicePlan(compatible=False, finish=finish)
    if wanted == have:
        return SlicePlan(drive=selected, finish=finish)
    scaled_down = all(wanted[name] <= have[name] for name in have)
    if not quota_reserved(selected) or scaled_down:
        return SlicePlan(drive=selected, resize=wanted, finish=finish)
    if len(active) == 1:
        return SlicePlan(drive=selected, create_replacing=selected)
    # A replacement is still pending and the job grew again: keep driving until the
    # slices are down to one.
    return SlicePlan(drive=selected, finish=finish)


def with_counts(workload: Workload, counts: Mapping[str, int]) -> list[PodSet]:
    """`workload`'s pod sets with the given counts (upstream's ApplyPodSetCounts)."""
    return [
        msgspec.structs.replace(pod_set, count=counts.get(pod_set.name, pod_set.count))
        for pod_set in workload.spec.pod_sets
    ]


def as_slice(
    kind: JobKind,
    job: Job,
    workload: Workload,
    replaces: Workload | None,
    *,
    max_length: int = SHORT_MAX_WORKLOAD_NAME_LENGTH,
) -> Workload:
    """A freshly built Workload turned into a slice (upstream's prepareWorkloadSlice): the
    elastic-job annotation, a name carrying the job's generation, the chain's first name
    and, for a scale-up, the slice it replaces."""
    meta = job_metadata.metadata(job)
    name = workload_name_for_owner(
        owner_name=str(meta.get("name", "")),
        owner_uid=str(meta.get("uid", "")),
        owner_kind=kind.resource.kind,
        owner_group=kind.resource.group,
        extra=str(meta.get("generation") or 0),
        max_length=max_length,
    )
    annotations = dict(workload.metadata.annotations)
    annotations[ELASTIC_JOB_ANNOTATION] = ELASTIC_JOB_ENABLED
    if replaces is None:
        annotations[SLICE_NAME_ANNOTATION] = name
    else:
        annotations[REPLACEMENT_FOR_ANNOTATION] = _key(replaces)
        origin = replaces.metadata.annotations.get(SLICE_NAME_ANNOTATION)
        annotations[SLICE_NAME_ANNOTATION] = origin or replaces.metadata.name
    metadata = msgspec.structs.replace(workload.metadata, name=name, annotations=annotations)
    return msgspec.structs.replace(workload, metadata=metadata)
