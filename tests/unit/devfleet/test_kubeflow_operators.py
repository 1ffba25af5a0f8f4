"""The Kubeflow training operator and the MPI Operator on the launcher: their command
lines, which CRDs each applies (one owner for mpijobs.kubeflow.org) and the training
operator's webhooks, read from the modules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devfleet.operators import catalog
from devfleet.operators.mpi_operator import MPI_OPERATOR
from devfleet.operators.process import crd_files, operator_module_dir
from devfleet.operators.spec import Launch, Operator, OperatorError
from devfleet.operators.training_operator import TRAINING_OPERATOR
from devfleet.operators.webhook_manifests import (
    kustomized_webhook_manifests,
    local_webhook_configurations,
)


def _launch() -> Launch:
    return Launch(
        kubeconfig=Path("/w/kubeconfig"),
        workdir=Path("/w"),
        cert_dir=Path("/w/certs"),
        ports={"webhook": 21001, "health": 21002, "metrics": 21003},
        module_dir=Path("/m"),
        qps=20,
        burst=40,
    )


def _module(operator: Operator) -> Path:
    if shutil.which("go") is None:
        pytest.skip("needs the go command to locate the module")
    try:
        return operator_module_dir(operator)
    except OperatorError as exc:
        pytest.skip(f"module not available: {exc}")


def test_the_training_operator_runs_every_v1_kind_but_mpijob_on_loopback() -> None:
    argv = TRAINING_OPERATOR.command(_launch())
    schemes = [a.removeprefix("--enable-scheme=") for a in argv if a.startswith("--enable-")]
    assert schemes == ["pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob"]
    assert "--webhook-server-port=21001" in argv and "--cert-dir=/w/certs" in argv
    assert "--health-probe-bind-address=127.0.0.1:21002" in argv
    assert "--webhook-host=127.0.0.1" in argv


def test_the_mpi_operator_serves_its_health_check_on_the_chosen_port() -> None:
    launch = _launch()
    argv = MPI_OPERATOR.command(launch)
    assert "--health-addr=127.0.0.1:21002" in argv
    assert "--kubeConfig=/w/kubeconfig" in argv
    assert MPI_OPERATOR.webhook_dir is None and MPI_OPERATOR.ready_path == "/healthz"


def test_both_are_in_the_catalog() -> None:
    assert catalog.OPERATORS["training-operator"] is TRAINING_OPERATOR
    assert catalog.OPERATORS["mpi-operator"] is MPI_OPERATOR


def test_only_the_mpi_operator_applies_the_mpijob_crd() -> None:
    training = _module(TRAINING_OPERATOR)
    applied = [
        p.name
        for p in crd_files(training / TRAINING_OPERATOR.crd_dirs[0])
        if p.name not in TRAINING_OPERATOR.crd_skip
    ]
    assert applied == [
        "kubeflow.org_jaxjobs.yaml",
        "kubeflow.org_paddlejobs.yaml",
        "kubeflow.org_pytorchjobs.yaml",
        "kubeflow.org_tfjobs.yaml",
        "kubeflow.org_xgboostjobs.yaml",
    ]
    mpi = _module(MPI_OPERATOR)
    assert [p.name for p in crd_files(mpi / MPI_OPERATOR.crd_dirs[0])] == [
        "kubeflow.org_mpijobs.yaml"
    ]


def test_the_training_operators_validating_webhooks_point_at_the_local_server() -> None:
    module = _module(TRAINING_OPERATOR)
    assert TRAINING_OPERATOR.webhook_dir is not None
    manifests = kustomized_webhook_manifests(module / TRAINING_OPERATOR.webhook_dir)
    (configuration,) = local_webhook_configurations(
        manifests, port=1, ca_bundle=b"x", prefix=TRAINING_OPERATOR.webhook_prefix
    )
    assert configuration["metadata"]["name"] == "fleetq-training-operator-validating"
    urls = sorted(w["clientConfig"]["url"] for w in configuration["webhooks"])
    assert urls == [
        f"https://127.0.0.1:1/validate-kubeflow-org-v1-{kind}"
        for kind in ("jaxjob", "paddlejob", "pytorchjob", "tfjob", "xgboostjob")
    ]


def test_kwok_finishes_the_pods_the_training_operator_owns_and_keeps_the_rest_of_the_stage() -> (
    None
):
    import yaml

    from devfleet.kwok_stages import StageFilesMissing, stage_documents

    if shutil.which("go") is None:
        pytest.skip("needs the go command to locate the kwok module")
    try:
        documents = [yaml.safe_load(doc) for doc in stage_documents()]
    except StageFilesMissing as exc:
        pytest.skip(str(exc))
    (complete,) = [d for d in documents if d["metadata"]["name"] == "pod-complete"]
    expressions = {e["key"]: e for e in complete["spec"]["selector"]["matchExpressions"]}
    owners = expressions[".metadata.ownerReferences.[].kind"]["values"]
    assert owners == ["Job", "PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"]
    assert expressions[".status.phase"]["values"] == ["Running"]
    assert "phase: Succeeded" in complete["spec"]["next"]["statusTemplate"]
