"""Does a Workload still stand for its job, and what to do with the ones that do not.

A user may edit a suspended job (its resources, counts, min-counts), and the manager may
crash between writes; the reconciler then holds a job and zero or more Workloads it owns.
Upstream's rule, kept here for every kind: the first Workload equivalent to the job is
its Workload; the others are deleted, except that a suspended job whose only candidate
has no quota reserved gets that Workload updated in place rather than recreated. A
running job without a matching Workload is stopped, restoring its templates from the old
Workload when there is exactly one.

"Equivalent" compares what admission depends on (see `pod_set_equality`). For a Workload
with quota reserved, the job is compared with what admission made of it (flavors merged
in, the admitted count under partial admission: `admitted_pod_sets`, which a kind uses
for `JobKind.expected_running_pod_sets` unless it runs its pods differently);
tolerations are not compared once the Workload is admitted, since admission itself added
some.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from core.api.resource_flavor import ResourceFlavor
from core.api.validation.labels import label_value_problem
from core.api.validation.workload import has_condition, quota_reserved
from core.api.workload import PodSet, Workload
from core.api.workload_conditions import WorkloadConditionType
from integrations.framework import job_metadata
from integrations.framework.job_kind import JobKind
from integrations.framework.job_metadata import Job
from integrations.framework.labels import JOB_UID_LABEL
from integrations.framework.pod_set_equality import pod_sets_equivalent
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    MissingFlavor,
    infos_from_admission,
    merge_into_template,
)
from integrations.framework.workload_builder import owner_reference

__all__ = [
    "PrebuiltOwnership",
    "WorkloadMatch",
    "admitted_pod_sets",
    "adopt_prebuilt_workload",
    "match_workloads",
    "workload_matches_job",
]


def admitted_pod_sets(
    workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> list[PodSet] | None:
    """The pod sets as a started job should show them; None without a usable admission."""
    if not quota_reserved(workload):
        return None
    try:
        infos = {info.name: info for info in infos_from_admission(workload, flavors)}
    except (InvalidPodSetInfo, MissingFlavor):
        return None
    partial = any(pod_set.min_count is not None for pod_set in workload.spec.pod_sets)
    running: list[PodSet] = []
    for pod_set in workload.spec.pod_sets:
        info = infos.get(pod_set.name)
        if info is None:
            return None
        try:
            template = merge_into_template(pod_set.template, info)
        except InvalidPodSetInfo:
            return None
        count = info.count if partial and pod_set.min_count is not None else pod_set.count
        running.append(msgspec.structs.replace(pod_set, template=template, count=count))
    return running


def workload_matches_job(
    kind: JobKind,
    job: Job,
    workload: Workload,
    flavors: Mapping[str, ResourceFlavor],
) -> bool:
    """Whether `workload` (owned by the job) still describes `job` (a composed job is
    matched by its kind: `ComposedJobs.match_composed`)."""
    owner = next((ref for ref in workload.metadata.owner_references if ref.controller), None)
    if owner is None or owner.name != job_metadata.metadata(job).get("name"):
        return False
    wanted_time = job_metadata.maximum_execution_time_seconds(job)
    if workload.spec.maximum_execution_time_seconds != wanted_time:
        return False
    pod_sets = kind.pod_sets(job)
    admitted = has_condition(workload, WorkloadConditionType.ADMITTED)
    running = kind.expected_running_pod_sets(workload, flavors)
    if running is not None:
        if pod_sets_equivalent(pod_sets, running, ignore_tolerations=admitted):
            return True
        # Admitted but not started yet: compare with what the Workload was built from.
        return kind.is_suspended(job) and pod_sets_equivalent(
            pod_sets, workload.spec.pod_sets, ignore_tolerations=admitted
        )
    return pod_sets_equivalent(pod_sets, workload.spec.pod_sets, ignore_tolerations=admitted)


@dataclass(frozen=True, slots=True)
class WorkloadMatch:
    """What the reconciler does with the Workloads a job owns."""

    match: Workload | None = None
    """The job's Workload, when one still describes it."""
    to_update: Workload | None = None
    """Update this one's spec to the job's (see `workload_builder.rebuilt_spec`)."""
    to_delete: list[Workload] = field(default_factory=list)
    """Remove their finalizer and delete them."""
    stop_job: bool = False
    """Stop the running job: nothing matches it any more."""
    restore_from: Workload | None = None
    """With `stop_job`: the Workload whose record restores the job's templates (or None)."""


def match_workloads(
    kind: JobKind,
    job: Job,
    owned: Sequence[Workload],
    flavors: Mapping[str, ResourceFlavor],
) -> WorkloadMatch:
    """Sort the Workloads controlled by `job` (in the caller's stable order)."""
    match: Workload | None = None
    others: list[Workload] = []
    for workload in owned:
        if match is None and workload_matches_job(kind, job, workload, flavors):
            match = workload
        else:
            others.append(workload)
    suspended = kind.is_suspended(job)
    to_update = None
    if match is None and others and suspended and not quota_reserved(others[0]):
        to_update, others = others[0], others[1:]
    stop = match is None and not suspended and kind.finished(job) is None
    return WorkloadMatch(
        match=match,
        to_update=to_update,
        to_delete=others,
        stop_job=stop,
        restore_from=others[0] if stop and len(others) == 1 else None,
    )


class PrebuiltOwnership(enum.Enum):
    """Relation of a prebuilt Workload (named by the Job's label) to the Job."""

    OWNED = "owned"
    """Already controlled by the Job."""
    ADOPTED = "adopted"
    """Not controlled by anyone: the Job takes it (write the returned Workload)."""
    FOREIGN = "foreign"
    """Controlled by another object: leave it, the Job has no Workload."""


def adopt_prebuilt_workload(
    kind: JobKind, job: Job, workload: Workload
) -> tuple[PrebuiltOwnership, Workload]:
    """Make the job the controller of its prebuilt Workload (MultiKueue's remote copies)."""
    uid = str(job_metadata.metadata(job).get("uid", ""))
    owner = next((ref for ref in workload.metadata.owner_references if ref.controller), None)
    if owner is not None:
        state = PrebuiltOwnership.OWNED if owner.uid == uid else PrebuiltOwnership.FOREIGN
        return state, workload
    reference = owner_reference(kind, job)
    labels = dict(workload.metadata.labels)
    if uid and label_value_problem(uid) is None:
        labels[JOB_UID_LABEL] = uid
    metadata = msgspec.structs.replace(
        workload.metadata,
        owner_references=[*workload.metadata.owner_references, reference],
        labels=labels,
    )
    return PrebuiltOwnership.ADOPTED, msgspec.structs.replace(workload, metadata=metadata)
