"""Reading a JobSet kept as a plain dict, with the apiserver's and JobSet's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from integrations.framework.job_metadata import Job, int_value, section, spec, status

JOBSET_GROUP: Final = "jobset.x-k8s.io"
JOBSET_VERSION: Final = "v1alpha2"
JOBSET_KIND: Final = "JobSet"
JOBSET_CONTROLLER_NAME: Final = "jobset.sigs.k8s.io/jobset-controller"
"""The managedBy value meaning "JobSet's own controller" (same as unset)."""
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
"""Label JobSet puts on every child Job and pod, valued with the JobSet's name."""
JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"
"""Label holding a child Job's index within its replicated job."""


def replicated_jobs(jobset: Job) -> list[Mapping[str, Any]]:
    """spec.replicatedJobs, in order (entries that are not objects are skipped)."""
    return [rj for rj in spec(jobset).get("replicatedJobs") or () if isinstance(rj, Mapping)]


def replicas(replicated_job: Mapping[str, Any]) -> int:
    """A replicated job's replicas; JobSet defaults it to 1."""
    value = int_value(replicated_job.get("replicas"))
    return 1 if value is None else value


def job_spec(replicated_job: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(section(replicated_job, "template"), "spec")


def pod_template(replicated_job: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(job_spec(replicated_job), "template")


def pods_per_replica(replicated_job: Mapping[str, Any]) -> int:
    """Pods one child Job runs at once: parallelism (default 1), at most completions."""
    template = job_spec(replicated_job)
    parallelism = int_value(template.get("parallelism"))
    count = 1 if parallelism is None else parallelism
    completions = int_value(template.get("completions"))
    return completions if completions is not None and completions < count else count


def replicated_job_statuses(jobset: Job) -> dict[str, Mapping[str, Any]]:
    """status.replicatedJobsStatus by replicated job name."""
    out: dict[str, Mapping[str, Any]] = {}
    for item in status(jobset).get("replicatedJobsStatus") or ():
        if isinstance(item, Mapping) and item.get("name"):
            out[str(item["name"])] = item
    return out


def status_count(item: Mapping[str, Any], field: str) -> int:
    return int_value(item.get(field)) or 0
