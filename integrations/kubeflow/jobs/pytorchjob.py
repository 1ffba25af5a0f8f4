"""PyTorchJob (kubeflow.org/v1, framework `kubeflow.org/pytorchjob`): pod sets
master, worker, in that order."""

from __future__ import annotations

from typing import Final

from integrations.kubeflow.definition import KubeflowJobDefinition
from integrations.kubeflow.kind import KubeflowJobKind

PYTORCHJOB: Final = KubeflowJobKind(
    KubeflowJobDefinition(
        kind="PyTorchJob",
        plural="pytorchjobs",
        replica_specs_field="pytorchReplicaSpecs",
        replica_types=("Master", "Worker"),
    )
)
