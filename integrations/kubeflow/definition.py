"""What tells one Kubeflow v1 job kind from another: a `KubeflowJobDefinition`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from integrations.framework.replica_spec_jobs import ReplicaSpecShape

KUBEFLOW_GROUP: Final = "kubeflow.org"
KUBEFLOW_VERSION: Final = "v1"
KUBEFLOW_CONTROLLER_NAME: Final = "kubeflow.org/training-operator"
"""The runPolicy.managedBy value meaning "the training operator" (same as unset)."""
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
"""Label the operator puts on every pod of a job, valued with the job's name."""
REPLICA_INDEX_LABEL: Final = "training.kubeflow.org/replica-index"
"""Label holding a pod's index within its replica type."""


@dataclass(frozen=True, slots=True)
class KubeflowJobDefinition:
    """One kind of the family: its names and its replica-spec shape."""

    kind: str
    """`PyTorchJob`, `TFJob`, ..."""
    plural: str
    replica_specs_field: str
    replica_types: tuple[str, ...]
    """In upstream's pod-set order (`OrderedReplicaTypes`)."""

    @property
    def framework(self) -> str:
        """Upstream's integration name: `kubeflow.org/pytorchjob`, ..."""
        return f"{KUBEFLOW_GROUP}/{self.kind.lower()}"

    @property
    def shape(self) -> ReplicaSpecShape:
        return ReplicaSpecShape(
            replica_specs_field=self.replica_specs_field,
            replica_types=self.replica_types,
            replica_index_label=REPLICA_INDEX_LABEL,
        )
