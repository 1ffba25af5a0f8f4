"""What a batch/v1 Job's status tells its Workload: finished, active, ready, reclaimable.

The Job controller of Kubernetes owns the Job's status; Kueue only reads it. A Job is
finished once it has a Complete or Failed condition that is True (and the Workload then
gets Finished with reason Succeeded or Failed and the condition's message). Pods that
succeeded while more of them run than the remaining completions need hold quota for
nothing; they are reported as reclaimable so the ClusterQueue can admit others.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.api.meta import Condition, ConditionStatus
from core.api.workload import DEFAULT_POD_SET_NAME, ReclaimablePod
from core.api.workload_conditions import WorkloadReason
from integrations.batch_job import job_fields
from integrations.batch_job.job_fields import Job
from integrations.framework.job_kind import JobFinish

__all__ = [
    "JobConditionType",
    "JobFinish",
    "PodsReadyState",
    "is_active",
    "job_finished",
    "pods_ready",
    "pods_ready_state",
    "reclaimable_pods",
]


class JobConditionType(enum.StrEnum):
    """The Job conditions Kueue reads."""

    COMPLETE = "Complete"
    FAILED = "Failed"


def job_finished(job: Job) -> JobFinish | None:
    """The first True Complete or Failed condition, as a Finished reason; None if running."""
    for condition in job_fields.status(job).get("conditions") or ():
        if not isinstance(condition, Mapping) or condition.get("status") != "True":
            continue
        kind = condition.get("type")
        if kind in (JobConditionType.COMPLETE, JobConditionType.FAILED):
            reason = (
                WorkloadReason.FAILED
                if kind == JobConditionType.FAILED
                else WorkloadReason.SUCCEEDED
            )
            return JobFinish(reason, str(condition.get("message") or ""))
    return None


def is_active(job: Job) -> bool:
    """Whether any pod of the Job still runs (status.active); a stop waits for none."""
    return job_fields.status_int(job, "active") != 0


def _uncounted_succeeded(job: Job) -> int:
    uncounted: Any = job_fields.status(job).get("uncountedTerminatedPods")
    if not isinstance(uncounted, Mapping):
        return 0
    succeeded = uncounted.get("succeeded")
    return len(succeeded) if isinstance(succeeded, list) else 0


def pods_ready(job: Job) -> bool:
    """Whether as many pods are ready or succeeded as the Job runs at once."""
    ready = job_fields.status_int(job, "ready")
    succeeded = job_fields.status_int(job, "succeeded") + _uncounted_succeeded(job)
    return ready + succeeded >= job_fields.pods_count(job)


def reclaimable_pods(job: Job) -> list[ReclaimablePod]:
    """Pods of quota the Job no longer needs: parallelism beyond the remaining completions.

    With parallelism 4, completions 10 and 8 succeeded, only 2 pods remain to run, so 2
    of the 4 admitted pods' quota can go. Nothing is reclaimable while the remaining
    work still needs every parallel pod. Without completions the Job counts as needing
    `parallelism` successes, so each success frees one pod's quota.
    """
    parallelism = job_fields.parallelism(job)
    succeeded = job_fields.status_int(job, "succeeded")
    if parallelism == 1 or succeeded == 0:
        return []
    completions = job_fields.completions(job)
    remaining = (parallelism if completions is None else completions) - succeeded
    if remaining >= parallelism:
        return []
    return [ReclaimablePod(name=DEFAULT_POD_SET_NAME, count=parallelism - remaining)]


@dataclass(frozen=True, slots=True)
class PodsReadyState:
    """The PodsReady condition a Workload should carry (waitForPodsReady)."""

    status: ConditionStatus
    reason: WorkloadReason
    message: str


_NOT_READY = "Not all pods are ready or succeeded"
_RECOVERING = "At least one pod has failed, waiting for recovery"
_READY = "All pods reached readiness and the workload is running"


def pods_ready_state(
    *, admitted: bool, job_pods_ready: bool, current: Condition | None
) -> PodsReadyState:
    """Next PodsReady condition from admission, the Job's readiness and the current one.

    A Workload that was ready and lost a pod waits for recovery (and says so until it is
    ready again, then reports Recovered instead of Started).
    """
    if not admitted:
        return PodsReadyState(ConditionStatus.FALSE, WorkloadReason.WAIT_FOR_START, _NOT_READY)
    recovering = current is not None and current.reason in (
        WorkloadReason.WAIT_FOR_RECOVERY,
        WorkloadReason.RECOVERED,
    )
    if job_pods_ready:
        reason = WorkloadReason.RECOVERED if recovering else WorkloadReason.STARTED
        return PodsReadyState(ConditionStatus.TRUE, reason, _READY)
    if current is not None and (
        current.status is ConditionStatus.TRUE or current.reason == WorkloadReason.WAIT_FOR_RECOVERY
    ):
        return PodsReadyState(ConditionStatus.FALSE, WorkloadReason.WAIT_FOR_RECOVERY, _RECOVERING)
    return PodsReadyState(ConditionStatus.FALSE, WorkloadReason.WAIT_FOR_START, _NOT_READY)
