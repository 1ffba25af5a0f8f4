"""Kinds that start in more than one write: `StartsInSteps`.

`JobKind.start` returns the started job and the controller writes the difference at once.
Some operators refuse that single write: Kubeflow Trainer's webhook lets a TrainJob's
`podSpecOverrides` change only while the TrainJob stays suspended, so the admitted
flavors' node selector and tolerations must be written first and the unsuspend after.
Such a kind also implements `plan_start`; the job controller then runs its writes in
order (each guarded by the version the previous one left) instead of diffing `start`.
Planning again after any prefix of the writes was done yields only the rest, so a crash
in between resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from core.api.resource_flavor import ResourceFlavor
from core.api.workload import Workload
from integrations.framework.job_kind import JobWrite
from integrations.framework.job_metadata import Job


@runtime_checkable
class StartsInSteps(Protocol):
    """A kind whose start is an ordered list of writes (see module docstring)."""

    def plan_start(
        self, job: Job, workload: Workload, flavors: Mapping[str, ResourceFlavor]
    ) -> list[JobWrite]:
        """The writes, in order, that leave the job as `start` describes it (empty when
        it is started already); raises `InvalidPodSetInfo` like `start`."""
        ...
