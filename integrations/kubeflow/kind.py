"""Any Kubeflow v1 job as a `JobKind`: one class, one instance per kind (see `jobs/`)."""

from __future__ import annotations

from integrations.framework.job_kind import JobResource
from integrations.framework.replica_spec_kind import ReplicaSpecJobKind
from integrations.kubeflow.definition import (
    JOB_NAME_LABEL,
    KUBEFLOW_CONTROLLER_NAME,
    KUBEFLOW_GROUP,
    KUBEFLOW_VERSION,
    KubeflowJobDefinition,
)


class KubeflowJobKind(ReplicaSpecJobKind):
    """A kubeflow.org/v1 job kind of the training operator (upstream's `KubeflowJob`). The
    operator creates pods and Services itself: nothing it makes is queued."""

    def __init__(self, definition: KubeflowJobDefinition) -> None:
        super().__init__(
            framework=definition.framework,
            resource=JobResource(
                KUBEFLOW_GROUP, KUBEFLOW_VERSION, definition.plural, definition.kind
            ),
            shape=definition.shape,
            own_controller_name=KUBEFLOW_CONTROLLER_NAME,
            pod_name_labels=(JOB_NAME_LABEL,),
        )
        self.definition = definition
