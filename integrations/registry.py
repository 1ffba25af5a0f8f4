"""Every job kind fleetq implements: adding a kind is one line here (docs/integrations.md)."""

from __future__ import annotations

from typing import Final

from integrations.batch_job.kind import BATCH_JOB
from integrations.deployment.kind import DEPLOYMENT
from integrations.framework.registry import FrameworkRegistry
from integrations.jobset.kind import JOBSET
from integrations.kubeflow.jobs.jaxjob import JAXJOB
from integrations.kubeflow.jobs.paddlejob import PADDLEJOB
from integrations.kubeflow.jobs.pytorchjob import PYTORCHJOB
from integrations.kubeflow.jobs.tfjob import TFJOB
from integrations.kubeflow.jobs.xgboostjob import XGBOOSTJOB
from integrations.leaderworkerset.kind import LEADERWORKERSET
from integrations.mpijob.kind import MPIJOB
from integrations.pod.kind import POD
from integrations.ray.raycluster_kind import RAYCLUSTER
from integrations.ray.rayjob_kind import RAYJOB
from integrations.ray.rayservice_kind import RAYSERVICE
from integrations.statefulset.kind import STATEFULSET
from integrations.trainjob.kind import TRAINJOB

REGISTRY: Final = FrameworkRegistry(
    (
        BATCH_JOB,
        JOBSET,
        RAYJOB,
        RAYCLUSTER,
        RAYSERVICE,
        TRAINJOB,
        PYTORCHJOB,
        TFJOB,
        XGBOOSTJOB,
        PADDLEJOB,
        JAXJOB,
        MPIJOB,
        POD,
        DEPLOYMENT,
        STATEFULSET,
        LEADERWORKERSET,
    )
)
