"""What a TrainJob's status tells its Workload, as upstream reads it.

Finished once Trainer sets `Complete` (succeeded) or `Failed` to True, with its message
(Trainer copies them from its JobSet's terminal condition). The child Job counts come
from `status.jobsStatus` where Trainer fills it (v2.1 on) and otherwise from the JobSet
Trainer created (v2.0 leaves jobsStatus empty; upstream then read the JobSet too):
active while any child Job is active; pods ready when every child Job is ready or
succeeded (counted in Jobs); succeeded child Jobs free their pods' quota.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.api.workload import ReclaimablePod
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_kind import JobFinish
from integrations.framework.job_metadata import Job, status
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.runtime_jobset import ReplicatedJob

COMPLETE = "Complete"
FAILED = "Failed"

ChildCounts = dict[str, Mapping[str, object]]
"""Per replicated job name: ready / succeeded / failed / active / suspended child Jobs."""


def trainjob_finished(job: Job) -> JobFinish | None:
    """Complete wins over Failed, as upstream checks them in that order."""
    conditions = [c for c in status(job).get("conditions") or () if isinstance(c, Mapping)]
    for kind, reason in ((COMPLETE, WorkloadReason.SUCCEEDED), (FAILED, WorkloadReason.FAILED)):
        for condition in conditions:
            if condition.get("type") == kind and condition.get("status") == "True":
                return JobFinish(reason=reason, message=str(condition.get("message") or ""))
    return None


def child_counts(job: Job, jobset: Mapping[str, object] | None) -> ChildCounts:
    counts: ChildCounts = dict(fields.jobs_status(job))
    if not counts and jobset is not None:
        counts = dict(fields.jobset_status(jobset))
    return counts


def is_active(counts: ChildCounts) -> bool:
    return any(fields.status_count(item, "active") > 0 for item in counts.values())


def pods_ready(replicated: list[ReplicatedJob], counts: ChildCounts) -> bool:
    wanted = sum(job.replicas for job in replicated)
    ready = sum(
        fields.status_count(item, "ready") + fields.status_count(item, "succeeded")
        for item in counts.values()
    )
    return wanted == ready


def reclaimable_pods(replicated: list[ReplicatedJob], counts: ChildCounts) -> list[ReclaimablePod]:
    out: list[ReclaimablePod] = []
    for job in replicated:
        item = counts.get(job.name)
        succeeded = 0 if item is None else fields.status_count(item, "succeeded")
        if 0 < succeeded <= job.replicas:
            out.append(ReclaimablePod(name=job.name, count=succeeded * job.pods_per_replica))
    return out
