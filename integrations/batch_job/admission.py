"""Starting an admitted batch/v1 Job and stopping an evicted one, as upstream Kueue does.

Start: unsuspend the Job with its pods pointed at the admitted flavors (node labels into
nodeSelector, tolerations appended), admission checks' podSetUpdates applied, Kueue's pod
labels added and, under partial admission, parallelism set to the admitted count.
Starting a Job that already runs with the same admission changes nothing.

Stop: suspend the Job and put the pod template's scheduling fields (labels, annotations,
nodeSelector, tolerations, schedulingGates) and, under partial admission, parallelism
back to what the Workload recorded when it was built from the Job. Kubernetes only lets
those fields change on a suspended Job whose `status.startTime` is unset, so a stop is
three writes, in order: suspend (marking the Job "stopping"), clear startTime, restore
(dropping the mark). The mark makes the Job count as not suspended, so if the hub dies
half-way the next reconcile finds it unfinished and completes it. Every write is derived
from the current Job, so replanning after any partial progress yields only what is left.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.framework.job_kind import JobSubresource, JobWrite
from integrations.framework.json_patch import diff
from integrations.framework.labels import (
    BATCH_JOB_MANAGED_POD_LABELS,
    JOB_STOPPING_ANNOTATION,
    MULTIKUEUE_MANAGED_BY,
)
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    PodSetInfo,
    info_from_pod_set,
    infos_from_admission,
    merge_into_template,
    restore_template,
)

__all__ = [
    "FAILED_TO_START_REASON",
    "JobSubresource",
    "JobWrite",
    "plan_stop",
    "start_job",
]

FAILED_TO_START_REASON = "FailedToStart"
"""Finished reason upstream gives a Workload whose admission cannot be applied to its job."""


def _only_info(infos: list[PodSetInfo]) -> PodSetInfo:
    if len(infos) != 1:
        raise InvalidPodSetInfo(f"a Job has exactly one pod set, the admission has {len(infos)}")
    return infos[0]


def _set_parallelism(job: dict[str, Any], count: int) -> None:
    spec = job["spec"]
    spec["parallelism"] = count
    if job_fields.completions_follow_parallelism(job):
        spec["completions"] = count


def start_job(
    job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> dict[str, Any]:
    """The Job as it should be to run under `workload`'s admission.

    Raises `InvalidPodSetInfo` (a conflict, or a pod set count other than one: finish the
    Workload as FAILED_TO_START_REASON) or `MissingFlavor` (retry when the cache has it).
    """
    info = _only_info(infos_from_admission(workload, flavors))
    started: dict[str, Any] = copy.deepcopy(dict(job))
    spec = started.setdefault("spec", {})
    spec["template"] = merge_into_template(job_fields.template(job), info)
    spec["suspend"] = False
    if job_fields.min_pods_count(job) is not None:
        _set_parallelism(started, info.count)
    return started


def _suspended_for_stop(job: dict[str, Any]) -> dict[str, Any]:
    stopping = copy.deepcopy(job)
    stopping.setdefault("spec", {})["suspend"] = True
    meta = stopping.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), JOB_STOPPING_ANNOTATION: "true"}
    return stopping


# Counts of running pods a MultiKueue Job carries only because they were copied from its
# worker; the manager runs none of them.
_COPIED_RUNNING_COUNTS = ("active", "ready", "terminating")


def _without_start_time(job: dict[str, Any]) -> dict[str, Any]:
    """The status a stopped Job needs before its template may change again.

    The apiserver takes template changes only on a suspended Job that has no start time
    and no active pods. The Job controller drops both for pods it runs; a MultiKueue Job
    runs none on the manager, so the counts copied from its worker are reset here (its
    copy is being stopped; nothing would ever reset them).
    """
    cleared = copy.deepcopy(job)
    status = cleared.get("status", {})
    status.pop("startTime", None)
    if job_fields.managed_by(job) == MULTIKUEUE_MANAGED_BY:
        for name in _COPIED_RUNNING_COUNTS:
            if status.get(name):
                status[name] = 0
    return cleared


def _restored(job: dict[str, Any], workload: Workload | None) -> dict[str, Any]:
    restored = copy.deepcopy(job)
    if workload is not None and workload.spec.pod_sets:
        info = info_from_pod_set(workload.spec.pod_sets[0])
        if (
            job_fields.min_pods_count(restored) is not None
            and job_fields.parallelism(restored) != info.count
        ):
            _set_parallelism(restored, info.count)
        restored["spec"]["template"] = restore_template(
            job_fields.template(restored),
            workload.spec.pod_sets[0].template,
            keep_labels=BATCH_JOB_MANAGED_POD_LABELS,
        )
    annotations = restored.get("metadata", {}).get("annotations")
    if isinstance(annotations, dict) and JOB_STOPPING_ANNOTATION in annotations:
        del annotations[JOB_STOPPING_ANNOTATION]
        if not annotations:
            del restored["metadata"]["annotations"]
    return restored


def plan_stop(job: Job, workload: Workload | None) -> list[JobWrite]:
    """The writes, in order, that suspend `job` and restore it from `workload`'s record.

    Without a Workload (it is missing) the Job is only suspended. The plan is empty when
    the Job is already stopped and restored.
    """
    writes: list[JobWrite] = []
    current: dict[str, Any] = copy.deepcopy(dict(job))
    steps = (
        (JobSubresource.MAIN, _suspended_for_stop if not job_fields.is_suspended(job) else None),
        (JobSubresource.STATUS, _without_start_time),
        (JobSubresource.MAIN, lambda j: _restored(j, workload)),
    )
    for subresource, step in steps:
        if step is None:
            continue
        after = step(current)
        patch = diff(current, after)
        if patch:
            writes.append(JobWrite(subresource, patch, after))
            current = after
    return writes
