"""XGBoostJob (kubeflow.org/v1, framework `kubeflow.org/xgboostjob`): pod sets
master, worker, in that order."""

from __future__ import annotations

from typing import Final

from integrations.kubeflow.definition import KubeflowJobDefinition
from integrations.kubeflow.kind import KubeflowJobKind

XGBOOSTJOB: Final = KubeflowJobKind(
    KubeflowJobDefinition(
        kind="XGBoostJob",
        plural="xgboostjobs",
        replica_specs_field="xgbReplicaSpecs",
        replica_types=("Master", "Worker"),
    )
)
