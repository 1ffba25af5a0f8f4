"""The operator launcher and the JobSet controller on it: JobSet's Configuration, webhook
configurations built from an operator's own manifests, the defaulting check, resolving
requirements, a clear error without the binary, and stopping operators from their pid
files without ever signalling a stranger."""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from devfleet.operators import catalog
from devfleet.operators.jobset import (
    JOBSET,
    controller_configuration,
    defaulted_by_webhook,
    probe_jobset,
)
from devfleet.operators.process import (
    PID_FILE,
    OperatorProcess,
    crd_files,
    operator_module_dir,
    stop_operators_under,
)
from devfleet.operators.spec import Launch, Operator, OperatorError
from devfleet.operators.webhook_manifests import (
    apply_json_patch,
    kustomized_webhook_manifests,
    local_webhook_configurations,
)


def _launch(qps: float = 20, burst: int = 40) -> Launch:
    return Launch(
        kubeconfig=Path("/w/kubeconfig"),
        workdir=Path("/w"),
        cert_dir=Path("/w/certs"),
        ports={"webhook": 21001, "health": 21002, "metrics": 21003},
        module_dir=Path("/m"),
        qps=qps,
        burst=burst,
    )


def test_configuration_keeps_everything_on_loopback_without_leader_election() -> None:
    config = controller_configuration(_launch())
    assert config["apiVersion"] == "config.jobset.x-k8s.io/v1alpha1"
    assert config["kind"] == "Configuration"
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 21001, "certDir": "/w/certs"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:21002"}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:21003", "certDir": "/w/certs"}
    assert config["clientConnection"] == {"qps": 20, "burst": 40}


def test_json_patch_replace_add_and_remove() -> None:
    document = {"webhooks": [{"name": "a"}, {"name": "b"}], "meta": {"x": 1}}
    patched = apply_json_patch(
        document,
        [
            {"op": "replace", "path": "/webhooks/1", "value": {"name": "b2"}},
            {"op": "add", "path": "/webhooks/-", "value": {"name": "c"}},
            {"op": "add", "path": "/meta/y~1z", "value": 2},
            {"op": "remove", "path": "/meta/x"},
        ],
    )
    assert patched == {
        "webhooks": [{"name": "a"}, {"name": "b2"}, {"name": "c"}],
        "meta": {"y/z": 2},
    }
    assert document["webhooks"][1] == {"name": "b"}  # the input is left alone


def test_json_patch_refuses_what_it_does_not_know() -> None:
    with pytest.raises(OperatorError, match="unsupported"):
        apply_json_patch({"a": 1}, [{"op": "move", "path": "/a"}])
    with pytest.raises(OperatorError, match="missing member"):
        apply_json_patch({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}])


def _fake_webhook_dir(directory: Path) -> Path:
    """The shape of JobSet's config/components/webhook: manifests plus a JSON patch."""
    (directory / "patches").mkdir(parents=True)
    (directory / "manifests.yaml").write_text(
        """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mjobset.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-js}}
- name: mpod.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-pod}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vjobset.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate-js}}
"""
    )
    (directory / "patches" / "mutating.yaml").write_text(
        """- op: replace
  path: /webhooks/1
  value:
    name: mpod.kb.io
    clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-pod}}
    objectSelector: {matchExpressions: [{key: jobset.sigs.k8s.io/jobset-name, operator: Exists}]}
"""
    )
    (directory / "kustomization.yaml").write_text(
        """resources: [manifests.yaml]
patches:
- path: patches/mutating.yaml
  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}
"""
    )
    return directory


def test_webhook_configurations_point_at_the_local_server_with_the_ca(tmp_path: Path) -> None:
    manifests = kustomized_webhook_manifests(_fake_webhook_dir(tmp_path / "webhook"))
    mutating, validating = local_webhook_configurations(
        manifests, port=24443, ca_bundle=b"PEM", prefix="fq-js"
    )
    assert mutating["metadata"]["name"] == "fq-js-mutating"
    assert validating["metadata"]["name"] == "fq-js-validating"
    urls = [w["clientConfig"]["url"] for c in (mutating, validating) for w in c["webhooks"]]
    assert urls == [
        "https://127.0.0.1:24443/mutate-js",
        "https://127.0.0.1:24443/mutate-pod",
        "https://127.0.0.1:24443/validate-js",
    ]
    for configuration in (mutating, validating):
        for webhook in configuration["webhooks"]:
            assert "service" not in webhook["clientConfig"]
            assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == b"PEM"
    # The kustomization's patch was applied: pod webhooks only see JobSet pods.
    selector = mutating["webhooks"][1]["objectSelector"]["matchExpressions"][0]
    assert selector["key"] == "jobset.sigs.k8s.io/jobset-name"


def test_jobsets_own_webhook_manifests_build_four_local_webhooks() -> None:
    if shutil.which("go") is None:
        pytest.skip("needs the go command to locate the JobSet module")
    try:
        module = operator_module_dir(JOBSET)
    except OperatorError as exc:
        pytest.skip(f"JobSet module not available: {exc}")
    assert JOBSET.webhook_dir is not None
    manifests = kustomized_webhook_manifests(module / JOBSET.webhook_dir)
    configurations = local_webhook_configurations(
        manifests, port=1, ca_bundle=b"x", prefix=JOBSET.webhook_prefix
    )
    assert [c["metadata"]["name"] for c in configurations] == [
        "fleetq-jobset-mutating",
        "fleetq-jobset-validating",
    ]
    paths = {
        w["name"]: w["clientConfig"]["url"].removeprefix("https://127.0.0.1:1")
        for c in configurations
        for w in c["webhooks"]
    }
    assert paths == {
        "mjobset.kb.io": "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
        "mpod.kb.io": "/mutate--v1-pod",
        "vjobset.kb.io": "/validate-jobset-x-k8s-io-v1alpha2-jobset",
        "vpod.kb.io": "/validate--v1-pod",
    }
    pod_webhooks = [
        w for c in configurations for w in c["webhooks"] if w["name"][1:] == "pod.kb.io"
    ]
    assert all("objectSelector" in w for w in pod_webhooks)
    assert [p.name for p in crd_files(module / JOBSET.crd_dirs[0])] == [
        "jobset.x-k8s.io_jobsets.yaml"
    ]


def test_defaulting_is_recognised_only_when_the_webhook_ran() -> None:
    probe = probe_jobset("p")
    assert not defaulted_by_webhook(probe)
    probe["spec"]["successPolicy"] = {"operator": "All"}
    probe["spec"]["network"] = {"enableDNSHostnames": True}
    assert not defaulted_by_webhook(probe)  # the Jobs' completion mode is still missing
    probe["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"] = "Indexed"
    assert defaulted_by_webhook(probe)


def test_a_missing_binary_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEETQ_TOOLS_DIR", str(tmp_path / "tools"))
    controller = OperatorProcess(JOBSET, tmp_path / "kubeconfig", tmp_path / "work")
    with pytest.raises(OperatorError, match="run `fleetq dev tools jobset`"):
        controller.start()
    assert not (tmp_path / "work" / PID_FILE).exists()


def test_stop_operators_under_stops_its_own_and_spares_strangers(tmp_path: Path) -> None:
    ours = tmp_path / "jobset" / "manager"
    ours.mkdir(parents=True)
    # A stand-in running in its work directory, as the launcher starts an operator.
    process = subprocess.Popen(["sleep", "60"], cwd=ours, start_new_session=True)
    (ours / PID_FILE).write_text(f"{process.pid}\n")
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    other = tmp_path / "jobset" / "worker-1"
    other.mkdir()
    (other / PID_FILE).write_text(f"{stranger.pid}\n")  # a reused pid: not ours
    try:
        began = time.monotonic()
        assert stop_operators_under(tmp_path, grace=5) == [process.pid]
        assert process.wait(timeout=5) is not None
        assert time.monotonic() - began < 5
        assert stranger.poll() is None
        assert not list(tmp_path.rglob(PID_FILE))
    finally:
        stranger.kill()
        stranger.wait()
        process.kill()
        process.wait()


def _operator(name: str, requires: tuple[str, ...] = ()) -> Operator:
    return Operator(
        name=name,
        title=name,
        tool=name,
        binary=name,
        module=name,
        version="v0",
        command=lambda launch: [],
        requires=requires,
    )


def test_resolve_puts_requirements_first_once_and_names_unknown_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = {
        "jobset": _operator("jobset"),
        "trainer": _operator("trainer", requires=("jobset",)),
        "broken": _operator("broken", requires=("nowhere",)),
    }
    monkeypatch.setattr(catalog, "OPERATORS", known)
    assert [o.name for o in catalog.resolve(["trainer", "jobset"])] == ["jobset", "trainer"]
    with pytest.raises(OperatorError, match="unknown operator 'nowhere' \\(required by broken\\)"):
        catalog.resolve(["broken"])
    with pytest.raises(OperatorError, match="unknown operator 'ray'; known: broken, jobset"):
        catalog.resolve(["ray"])


def test_the_catalog_names_every_operator_by_its_key_and_a_built_tool() -> None:
    from devfleet.toolchain import tool

    for name, operator in catalog.OPERATORS.items():
        assert operator.name == name
        assert operator.binary in tool(operator.tool).binaries
        assert set(operator.requires) <= set(catalog.OPERATORS)


def test_crd_files_skip_kustomizations_and_other_manifests(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    )
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\n")
    (tmp_path / "role.yaml").write_text("kind: ClusterRole\n")
    assert [p.name for p in crd_files(tmp_path)] == ["a.yaml"]
