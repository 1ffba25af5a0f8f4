"""TFJob (kubeflow.org/v1, framework `kubeflow.org/tfjob`): pod sets
chief, master, ps, worker, evaluator, in that order."""

from __future__ import annotations

from typing import Final

from integrations.kubeflow.definition import KubeflowJobDefinition
from integrations.kubeflow.kind import KubeflowJobKind

TFJOB: Final = KubeflowJobKind(
    KubeflowJobDefinition(
        kind="TFJob",
        plural="tfjobs",
        replica_specs_field="tfReplicaSpecs",
        replica_types=("Chief", "Master", "PS", "Worker", "Evaluator"),
    )
)
