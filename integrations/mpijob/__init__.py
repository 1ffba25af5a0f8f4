"""kubeflow.org/v2beta1 MPIJob <-> Workload: the `kubeflow.org/mpijob` kind (MPI Operator).

An MPIJob is queued as one Workload with pod sets `launcher` then `worker` (the replica
types it has), suspended and started through `spec.runPolicy.suspend`, finished from its
Succeeded/Failed conditions and ready once Running, like the Kubeflow v1 jobs: the shape is
read by `integrations.framework.replica_spec_jobs`. The launcher runs as a batch/Job the
MPI Operator creates; that Job is part of the MPIJob and never queued on its own.
"""
