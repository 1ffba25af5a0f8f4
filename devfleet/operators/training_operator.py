"""The Kubeflow training operator (github.com/kubeflow/training-operator) as the fleet runs it.

It runs the kubeflow.org/v1 jobs fleetq queues — PyTorchJob, TFJob, XGBoostJob, PaddleJob,
JAXJob — each enabled by `--enable-scheme`. Its MPIJob v1 controller stays off and its
MPIJob v1 CRD is not applied: the MPI Operator (operators/mpi_operator.py) owns
`mpijobs.kubeflow.org` (v2beta1), and two controllers of one kind would fight.

The binary is the module's controllers and validating webhooks under our small command
(tools/go/training-operator/main.go): the module's own command manages its serving
certificate in a Secret of its namespace and a fixed /tmp directory, which does not fit
several operators on one machine; here the launcher's certificate is read from the cert
dir. Its `runPolicy.managedBy` support (v1.9) is what lets it run on the MultiKueue
manager too: it leaves jobs managed by `kueue.x-k8s.io/multikueue` alone.
"""

from __future__ import annotations

from typing import Final

from devfleet.operators.spec import WEBHOOK_HOST, Launch, Operator
from devfleet.toolchain import TRAINING_OPERATOR_VERSION

SCHEMES: Final = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
"""The kinds it runs (all but MPIJob)."""


def command(launch: Launch) -> list[str]:
    return [
        f"--kubeconfig={launch.kubeconfig}",
        *(f"--enable-scheme={scheme}" for scheme in SCHEMES),
        f"--webhook-host={WEBHOOK_HOST}",
        f"--webhook-server-port={launch.ports['webhook']}",
        f"--cert-dir={launch.cert_dir}",
        f"--health-probe-bind-address={launch.address('health')}",
        f"--metrics-bind-address={launch.address('metrics')}",
        "--zap-log-level=info",
        "--zap-encoder=console",
        "--zap-stacktrace-level=panic",
    ]


TRAINING_OPERATOR = Operator(
    name="training-operator",
    title="the Kubeflow training operator",
    tool="training-operator",
    binary="training-operator",
    module="github.com/kubeflow/training-operator",
    version=TRAINING_OPERATOR_VERSION,
    command=command,
    crd_dirs=("manifests/base/crds",),
    crd_skip=("kubeflow.org_mpijobs.yaml",),
    webhook_dir="manifests/base/webhook",
)
