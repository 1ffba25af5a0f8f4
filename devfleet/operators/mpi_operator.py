"""The MPI Operator (github.com/kubeflow/mpi-operator) as the fleet runs it: MPIJob v2beta1.

It has no webhooks. The binary is the module's MPIJob controller under our small command
(tools/go/mpi-operator/main.go), because the module's own command serves its health check
on the fixed port 8080 and always runs leader election; ours serves /healthz on a port
the launcher chose once its informers have synced. v0.6.0 honours `runPolicy.managedBy`,
so it runs on the MultiKueue manager too and leaves MultiKueue's MPIJobs alone.
"""

from __future__ import annotations

from devfleet.operators.spec import Launch, Operator
from devfleet.toolchain import MPI_OPERATOR_VERSION


def command(launch: Launch) -> list[str]:
    return [
        f"--kubeConfig={launch.kubeconfig}",
        f"--health-addr={launch.address('health')}",
        f"--kube-api-qps={launch.qps:g}",
        f"--kube-api-burst={launch.burst}",
    ]


MPI_OPERATOR = Operator(
    name="mpi-operator",
    title="the MPI Operator",
    tool="mpi-operator",
    binary="mpi-operator",
    module="github.com/kubeflow/mpi-operator",
    version=MPI_OPERATOR_VERSION,
    command=command,
    crd_dirs=("manifests/base",),
    port_names=("health",),
    ready_path="/healthz",
)
