"""JAXJob (kubeflow.org/v1, framework `kubeflow.org/jaxjob`): one pod set, worker."""

from __future__ import annotations

from typing import Final

from integrations.kubeflow.definition import KubeflowJobDefinition
from integrations.kubeflow.kind import KubeflowJobKind

JAXJOB: Final = KubeflowJobKind(
    KubeflowJobDefinition(
        kind="JAXJob",
        plural="jaxjobs",
        replica_specs_field="jaxReplicaSpecs",
        replica_types=("Worker",),
    )
)
