"""What a JobSet's status tells its Workload, as upstream reads it.

Finished once a Completed (succeeded) or Failed condition is True, with its message —
JobSet's failurePolicy decides when that is, so restarts within its limit are not an
end. Active while any replicated job has an active child Job. Pods are ready when every
child Job is ready or succeeded (counted in Jobs, as upstream does). Succeeded child Jobs
of a replicated job free `succeeded x pods per child Job` pods of its pod set.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.api.workload import ReclaimablePod
from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_kind import JobFinish
from integrations.framework.job_metadata import Job, status
from integrations.jobset import jobset_fields as fields

COMPLETED = "Completed"
FAILED = "Failed"


def _condition(jobset: Job, kind: str) -> Mapping[str, object] | None:
    for condition in status(jobset).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def jobset_finished(jobset: Job) -> JobFinish | None:
    """Completed wins over Failed, as upstream checks them in that order."""
    for kind, reason in ((COMPLETED, WorkloadReason.SUCCEEDED), (FAILED, WorkloadReason.FAILED)):
        condition = _condition(jobset, kind)
        if condition is not None and condition.get("status") == "True":
            return JobFinish(reason=reason, message=str(condition.get("message") or ""))
    return None


def is_active(jobset: Job) -> bool:
    return any(
        fields.status_count(item, "active") > 0
        for item in fields.replicated_job_statuses(jobset).values()
    )


def pods_ready(jobset: Job) -> bool:
    wanted = sum(fields.replicas(rj) for rj in fields.replicated_jobs(jobset))
    ready = sum(
        fields.status_count(item, "ready") + fields.status_count(item, "succeeded")
        for item in fields.replicated_job_statuses(jobset).values()
    )
    return wanted == ready


def reclaimable_pods(jobset: Job) -> list[ReclaimablePod]:
    statuses = fields.replicated_job_statuses(jobset)
    out: list[ReclaimablePod] = []
    for replicated_job in fields.replicated_jobs(jobset):
        name = str(replicated_job.get("name", ""))
        item = statuses.get(name)
        succeeded = 0 if item is None else fields.status_count(item, "succeeded")
        if 0 < succeeded <= fields.replicas(replicated_job):
            count = succeeded * fields.pods_per_replica(replicated_job)
            out.append(ReclaimablePod(name=name, count=count))
    return out
