"""What a plain Pod's status tells its Workload, as upstream reads it.

Finished once the Pod is Succeeded (success) or Failed, with the Pod's status message. A
single Pod never counts as active for a stop (upstream's IsActive looks at group members
only): its stop deletes it, and the quota is released at once. Pods are ready when the
Pod's Ready condition is True. A single Pod has nothing reclaimable.
"""

from __future__ import annotations

from core.api.workload_conditions import WorkloadReason
from integrations.framework.job_kind import JobFinish
from integrations.framework.job_metadata import Job, status
from integrations.pod import pod_fields as fields


def pod_finished(pod: Job) -> JobFinish | None:
    if not fields.is_terminated(pod):
        return None
    reason = (
        WorkloadReason.SUCCEEDED if fields.phase(pod) == fields.SUCCEEDED else WorkloadReason.FAILED
    )
    return JobFinish(reason=reason, message=str(status(pod).get("message") or ""))


def pods_ready(pod: Job) -> bool:
    return fields.condition_true(pod, "Ready")
