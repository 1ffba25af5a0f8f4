"""Starting an admitted TrainJob and stopping an evicted one, for Trainer v2.0.

A TrainJob has no pod templates of its own to edit: Trainer v2.0 takes per-job changes
through `spec.podSpecOverrides`. So, as upstream Kueue does for that Trainer version:

Start: append one override per pod set (targeting its replicated job) carrying what the
admission adds, record in `kueue.x-k8s.io/override-idx` where Kueue's overrides begin,
then unsuspend. Trainer's webhook allows override changes only on a suspended TrainJob,
so that is two writes (`plan_start`); planned again, done writes drop out. Overrides
replace tolerations as a whole, so Kueue's carries the template's tolerations followed
by the flavors'; node selectors merge key by key. Trainer v2.0 overrides have no pod
labels or annotations, so Kueue's pod labels are not set (as upstream).

Stop: suspend; then, once no child Job is active (Trainer's webhook refuses override
changes while the JobSet still runs pods), drop Kueue's overrides and the annotation,
which puts the TrainJob back exactly as the user wrote it. A MultiKueue TrainJob runs
nothing on the manager, so its restore does not wait.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.framework import job_metadata
from integrations.framework.job_kind import JobSubresource, JobWrite
from integrations.framework.job_metadata import Job, suspend_field
from integrations.framework.json_patch import diff
from integrations.framework.labels import MULTIKUEUE_MANAGED_BY
from integrations.framework.pod_set_info import (
    InvalidPodSetInfo,
    PodSetInfo,
    infos_from_admission,
    merge_into_template,
)
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.runtime_jobset import ReplicatedJob


def _override(job: ReplicatedJob, info: PodSetInfo) -> dict[str, Any]:
    merged = merge_into_template(job.template, info)  # raises on a node-label clash
    merged_spec = merged.get("spec") or {}
    override: dict[str, Any] = {"targetJobs": [{"name": job.name}]}
    if info.node_selector:
        override["nodeSelector"] = dict(info.node_selector)
    if info.tolerations and merged_spec.get("tolerations"):
        override["tolerations"] = copy.deepcopy(merged_spec["tolerations"])
    if info.scheduling_gates:
        override["schedulingGates"] = copy.deepcopy(info.scheduling_gates)
    return override


def _with_overrides(
    job: Job, overrides: list[Mapping[str, Any]], first_kueue: int | None
) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(dict(job))
    spec = out.setdefault("spec", {})
    if overrides:
        spec["podSpecOverrides"] = [copy.deepcopy(dict(o)) for o in overrides]
    else:
        spec.pop("podSpecOverrides", None)
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if first_kueue is None:
        annotations.pop(fields.FIRST_KUEUE_OVERRIDE_ANNOTATION, None)
    else:
        annotations[fields.FIRST_KUEUE_OVERRIDE_ANNOTATION] = str(first_kueue)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def _prepared(
    job: Job,
    replicated: list[ReplicatedJob],
    workload: Workload,
    flavors: Mapping[str, ResourceFlavor],
) -> dict[str, Any]:
    """The job with Kueue's overrides for `workload`'s admission, still as suspended as
    it was. Raises InvalidPodSetInfo / MissingFlavor as `infos_from_admission`."""
    infos = {info.name: info for info in infos_from_admission(workload, flavors)}
    names = [rj.name for rj in replicated]
    if sorted(names) != sorted(infos):
        raise InvalidPodSetInfo(
            f"the admission has pod sets {sorted(infos)}, the TrainJob's runtime "
            f"replicated jobs {names}"
        )
    user = fields.user_overrides(job)
    kueue = [_override(rj, infos[rj.name]) for rj in replicated]
    return _with_overrides(job, [*user, *kueue], len(user))


def start_trainjob(
    job: Job,
    replicated: list[ReplicatedJob],
    workload: Workload,
    flavors: Mapping[str, ResourceFlavor],
) -> dict[str, Any]:
    started = _prepared(job, replicated, workload, flavors)
    started["spec"]["suspend"] = False
    return started


def plan_start(
    job: Job,
    replicated: list[ReplicatedJob],
    workload: Workload,
    flavors: Mapping[str, ResourceFlavor],
) -> list[JobWrite]:
    """Overrides while suspended, then the unsuspend (see module docstring)."""
    prepared = _prepared(job, replicated, workload, flavors)
    writes: list[JobWrite] = []
    patch = diff(job, prepared)
    if patch:
        writes.append(JobWrite(JobSubresource.MAIN, patch, prepared))
    started = copy.deepcopy(prepared)
    started["spec"]["suspend"] = False
    patch = diff(prepared, started)
    if patch:
        writes.append(JobWrite(JobSubresource.MAIN, patch, started))
    return writes


def plan_stop(job: Job, *, active: bool) -> list[JobWrite]:
    """Suspend, then restore the user's overrides once nothing runs (or nothing)."""
    writes: list[JobWrite] = []
    current: Job = job
    if not suspend_field(job):
        suspended = copy.deepcopy(dict(job))
        suspended.setdefault("spec", {})["suspend"] = True
        writes.append(JobWrite(JobSubresource.MAIN, diff(job, suspended), suspended))
        current = suspended
    has_kueue_part = fields.FIRST_KUEUE_OVERRIDE_ANNOTATION in job_metadata.annotations_of(job)
    remote_only = job_metadata.managed_by(job) == MULTIKUEUE_MANAGED_BY
    if has_kueue_part and (remote_only or not active):
        restored = _with_overrides(current, fields.user_overrides(current), None)
        patch = diff(current, restored)
        if patch:
            writes.append(JobWrite(JobSubresource.MAIN, patch, restored))
    return writes
