"""The pod sets a TrainJob is queued as: those of the JobSet Trainer builds for it.

One pod set per replicated job of the runtime's JobSet template, named after it, in
order, with `replicas x pods per replica` pods (`runtime_jobset`); no partial admission
(a JobSet has none). Topology requests are read from the template as for a JobSet: the
child Job's completion index is the pod index, the replica index the sub-group.
"""

from __future__ import annotations

from core.api.workload import PodSet
from integrations.framework.env_deduplication import fold_duplicate_env
from integrations.framework.labels import BATCH_JOB_COMPLETION_INDEX_ANNOTATION
from integrations.framework.topology_request import topology_request_from_template
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.runtime_jobset import ReplicatedJob


def trainjob_pod_sets(replicated: list[ReplicatedJob]) -> list[PodSet]:
    out: list[PodSet] = []
    for job in replicated:
        template = fold_duplicate_env(job.template)
        out.append(
            PodSet(
                name=job.name,
                template=template,
                count=job.pods,
                topology_request=topology_request_from_template(
                    template,
                    pod_index_label=BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
                    sub_group_index_label=fields.JOB_INDEX_LABEL,
                    sub_group_count=job.replicas,
                ),
            )
        )
    return out
