"""The pod sets a JobSet is queued as, as upstream builds them.

One pod set per replicated job, named after it, in spec order: its child Jobs' pod
template and `replicas x pods per child Job` pods. JobSet does not support partial
admission, so there is no minCount. A topology request on the template is read with the
child Job's completion index as pod index and the replica index (`job-index`) as sub-group.
"""

from __future__ import annotations

from core.api.workload import PodSet
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.job_metadata import Job
from integrations.framework.labels import BATCH_JOB_COMPLETION_INDEX_ANNOTATION
from integrations.framework.topology_request import topology_request_from_template
from integrations.jobset import jobset_fields as fields


def jobset_pod_sets(jobset: Job) -> list[PodSet]:
    """The JobSet's pod sets as they are now (see module docstring)."""
    out: list[PodSet] = []
    for replicated_job in fields.replicated_jobs(jobset):
        template = fold_duplicate_env(fields.pod_template(replicated_job))
        replicas = fields.replicas(replicated_job)
        out.append(
            PodSet(
                name=str(replicated_job.get("name", "")),
                template=template,
                count=replicas * fields.pods_per_replica(replicated_job),
                topology_request=topology_request_from_template(
                    template,
                    pod_index_label=BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
                    sub_group_index_label=fields.JOB_INDEX_LABEL,
                    sub_group_count=replicas,
                ),
            )
        )
    return out
