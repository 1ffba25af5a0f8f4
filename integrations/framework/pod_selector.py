"""Optional capability: a kind whose pods are found through its status (PodLabelSelector).

Most kinds label their pods with the job's own name (`JobKind.pod_name_labels`). A RayJob's
pods belong to the RayCluster KubeRay made for it, whose generated name only the RayJob's
status tells (`status.rayClusterName`); its pods carry `ray.io/cluster=<that name>`. A kind
like that implements `SelectsPodsFromStatus`; `fleetq logs` reads the job where it runs and
lists pods with the selector it returns. Kinds without it are unaffected.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from integrations.framework.job_metadata import Job


@runtime_checkable
class SelectsPodsFromStatus(Protocol):
    def pod_label_selector(self, job: Job) -> str | None:
        """A label selector for the job's pods, or None while its status names none."""
        ...
