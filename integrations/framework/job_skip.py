"""Optional capability: a kind some of whose jobs Kueue leaves alone (upstream's JobWithSkip).

A RayJob that runs on an existing RayCluster (`spec.clusterSelector`) asks for no pods of
its own, so upstream neither queues nor starts it. A kind with such jobs implements
`SkipsJobs`; the job controller checks `isinstance(kind, SkipsJobs)` and does nothing for a
job `skip` says yes to. Kinds without it are unaffected.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from integrations.framework.job_metadata import Job


@runtime_checkable
class SkipsJobs(Protocol):
    def skip(self, job: Job) -> bool:
        """Whether Kueue must leave this job alone (no Workload, no start, no stop)."""
        ...


def skipped(kind: object, job: Job) -> bool:
    """Whether `kind` (any JobKind) says to leave `job` alone."""
    return isinstance(kind, SkipsJobs) and kind.skip(job)
