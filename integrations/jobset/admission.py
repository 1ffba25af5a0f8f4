"""Starting an admitted JobSet and stopping an evicted one, as upstream Kueue does.

Start: unsuspend the JobSet with each replicated job's pod template pointed at its pod
set's admitted flavors (node labels, tolerations, admission checks' podSetUpdates, Kueue's
pod labels). The admission must name exactly the JobSet's replicated jobs.

Stop: one write: suspend, and put each replicated job's pod template back to what the
Workload recorded (JobSet accepts template changes on a suspended JobSet, and, unlike a
batch Job, keeps no start time that would forbid them). The JobSet controller then
deletes the child Jobs. Planning again after the write yields nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.framework.job_kind import JobSubresource, JobWrite
from integrations.framework.job_metadata import Job, suspend_field
from integrations.framework.json_patch import diff
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    infos_from_admission,
    merge_into_template,
    restore_template,
)


def _replicated_jobs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    jobs = jobset.get("spec", {}).get("replicatedJobs")
    return [rj for rj in jobs or () if isinstance(rj, dict)]


def _template_holder(replicated_job: dict[str, Any]) -> dict[str, Any]:
    """The child Job spec holding the pod template (created if missing)."""
    job_template = replicated_job.setdefault("template", {})
    return job_template.setdefault("spec", {})


def start_jobset(
    jobset: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
) -> dict[str, Any]:
    """The JobSet as it should be to run under `workload`'s admission.

    Raises `InvalidPodSetInfo` when the admission's pod sets are not the JobSet's
    replicated jobs or a template conflicts (the Workload finishes as FailedToStart),
    `MissingFlavor` while a flavor is not cached yet (retried)."""
    infos = {info.name: info for info in infos_from_admission(workload, flavors)}
    started: dict[str, Any] = copy.deepcopy(dict(jobset))
    replicated = _replicated_jobs(started)
    names = [str(rj.get("name", "")) for rj in replicated]
    if sorted(names) != sorted(infos):
        raise InvalidPodSetInfo(
            f"the admission has pod sets {sorted(infos)}, the JobSet replicated jobs {names}"
        )
    for replicated_job in replicated:
        holder = _template_holder(replicated_job)
        info = infos[str(replicated_job.get("name", ""))]
        holder["template"] = merge_into_template(holder.get("template") or {}, info)
    started.setdefault("spec", {})["suspend"] = False
    return started


def _stopped(jobset: Job, workload: Workload | None) -> dict[str, Any]:
    stopped: dict[str, Any] = copy.deepcopy(dict(jobset))
    stopped.setdefault("spec", {})["suspend"] = True
    if workload is None:
        return stopped
    recorded = {pod_set.name: pod_set.template for pod_set in workload.spec.pod_sets}
    replicated = _replicated_jobs(stopped)
    if sorted(str(rj.get("name", "")) for rj in replicated) != sorted(recorded):
        return stopped  # not this JobSet's record (upstream skips the restore too)
    for replicated_job in replicated:
        holder = _template_holder(replicated_job)
        holder["template"] = restore_template(
            holder.get("template") or {}, recorded[str(replicated_job.get("name", ""))]
        )
    return stopped


def plan_stop(jobset: Job, workload: Workload | None) -> list[JobWrite]:
    """The one write that suspends the JobSet and restores its templates (or nothing)."""
    after = _stopped(jobset, workload)
    patch = diff(jobset, after)
    if not patch:
        return []
    return [JobWrite(JobSubresource.MAIN, patch, after)]


def is_suspended(jobset: Job) -> bool:
    return suspend_field(jobset)
