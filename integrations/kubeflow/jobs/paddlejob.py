"""PaddleJob (kubeflow.org/v1, framework `kubeflow.org/paddlejob`): pod sets
master, worker, in that order."""

from __future__ import annotations

from typing import Final

from integrations.kubeflow.definition import KubeflowJobDefinition
from integrations.kubeflow.kind import KubeflowJobKind

PADDLEJOB: Final = KubeflowJobKind(
    KubeflowJobDefinition(
        kind="PaddleJob",
        plural="paddlejobs",
        replica_specs_field="paddleReplicaSpecs",
        replica_types=("Master", "Worker"),
    )
)
