"""Every job kind fleetq implements: adding a kind is one line here (docs/integrations.md)."""

from __future__ import annotations

from typing import Final

from integrations.batch_job.kind import BATCH_JOB
from integrations.deployment.kind import DEPLOYMENT
from integrations.framework.registry import FrameworkRegistry
from integrations.jobset.kind import JOBSET
from integrations.pod.kind import POD
from integrations.statefulset.kind import STATEFULSET

REGISTRY: Final = FrameworkRegistry(
    (
        BATCH_JOB,
        JOBSET,
        POD,
        DEPLOYMENT,
        STATEFULSET,
    )
)
