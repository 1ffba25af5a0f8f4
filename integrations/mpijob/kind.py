"""MPIJob as a `JobKind` (upstream's `pkg/controller/jobs/mpijob`)."""

from __future__ import annotations

from typing import Final

from integrations.framework.job_kind import JobResource
from integrations.framework.replica_spec_jobs import ReplicaSpecShape
from integrations.framework.replica_spec_kind import ReplicaSpecJobKind

FRAMEWORK_NAME: Final = "kubeflow.org/mpijob"
MPIJOB_GROUP: Final = "kubeflow.org"
MPIJOB_VERSION: Final = "v2beta1"
MPIJOB_KIND: Final = "MPIJob"
MPI_OPERATOR_CONTROLLER_NAME: Final = "kubeflow.org/mpi-operator"
"""The runPolicy.managedBy value meaning "the MPI Operator" (same as unset)."""
JOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
"""Label the MPI Operator puts on the launcher and worker pods, valued with the job name."""
SHAPE: Final = ReplicaSpecShape(
    replica_specs_field="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    replica_index_label="training.kubeflow.org/replica-index",
)

MPIJOB: Final = ReplicaSpecJobKind(
    framework=FRAMEWORK_NAME,
    resource=JobResource(MPIJOB_GROUP, MPIJOB_VERSION, "mpijobs", MPIJOB_KIND),
    shape=SHAPE,
    own_controller_name=MPI_OPERATOR_CONTROLLER_NAME,
    pod_name_labels=(JOB_NAME_LABEL,),
    child_kinds=(("batch", "Job"),),  # the launcher's Job
)
