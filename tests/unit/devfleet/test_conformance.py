"""The pure parts of `fleetq dev conformance`: JUnit counts, ginkgo flags, the suite's
environment and work tree, the stand-ins, and the tool entry that builds the suites."""

from __future__ import annotations

from pathlib import Path

import pytest

from devfleet import toolchain
from devfleet.conformance import (
    ConformanceError,
    ConformanceOptions,
    conformance_fleet_spec,
    hub_configuration,
    operator_environment,
    prepare_tree,
    ray_image,
    suite_arguments,
    suite_environment,
)
from devfleet.conformance_report import summarize
from devfleet.conformance_stand_in import (
    LEADER_ELECTION_ID,
    deployment_manifest,
    webhook_service_manifest,
)
from devfleet.conformance_suites import (
    BASELINE,
    EXTENDED,
    SUITES,
    operator_stand_ins,
    suite_named,
)

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="1" errors="0" failures="2" time="12.5">
  <testsuite name="End To End Baseline Suite" tests="6" failures="2" skipped="1">
    <testcase name="[BeforeSuite]" classname="End To End Baseline Suite" status="passed"/>
    <testcase name="[It] Kueue when Creating a Job should unsuspend a job" status="passed"/>
    <testcase name="[It] Kueue when Creating a Job should readmit preempted job" status="failed">
      <failure message="" type="failed">[FAILED] Timed out after 90.000s.
/root/go/pkg/mod/sigs.k8s.io/kueue@v0.19.2/test/e2e/job_test.go:120
Expected
    &lt;bool&gt;: false
to be true</failure>
    </testcase>
    <testcase name="[It] Kueue should run with prebuilt workload" status="timedout">
      <failure message="" type="timedout">[TIMEDOUT] A suite timeout occurred</failure>
    </testcase>
    <testcase name="[It] Kueue visibility lists pending workloads" status="skipped">
      <skipped message="skipped"/>
    </testcase>
    <testcase name="[ReportAfterSuite] Generate JUnit Report" status="passed"/>
  </testsuite>
</testsuites>
"""


def test_specs_are_counted_and_suite_nodes_kept_apart() -> None:
    summary = summarize(JUNIT)
    assert summary.line() == "1 passed, 2 failed, 1 skipped"
    assert summary.total == 4
    assert [f.name for f in summary.failed] == [
        "[It] Kueue when Creating a Job should readmit preempted job",
        "[It] Kueue should run with prebuilt workload",
    ]
    assert summary.failed[0].message == "Timed out after 90.000s."
    assert summary.failed[1].status == "timedout"
    assert summary.failed_suite_nodes == []


def test_a_failing_before_suite_is_reported_not_counted_as_a_spec() -> None:
    junit = """<testsuites><testsuite>
      <testcase name="[BeforeSuite]" status="failed"><failure>[FAILED] no Deployment
      suite_test.go:70
      deployments.apps "kueue-controller-manager" not found</failure></testcase>
      <testcase name="[It] a" status="skipped"><skipped/></testcase>
    </testsuite></testsuites>"""
    summary = summarize(junit)
    assert summary.line() == "0 passed, 0 failed, 1 skipped"
    assert [n.name for n in summary.failed_suite_nodes] == ["[BeforeSuite]"]
    assert summary.failed_suite_nodes[0].message == "no Deployment"


def test_suite_arguments_carry_filter_report_timeout_and_focus(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    options = ConformanceOptions(label_filter="feature:job", focus="unsuspend", suite_timeout="5m")
    args = suite_arguments(options, junit)
    assert "--label-filter=feature:job" in args
    assert f"--junit-report={junit}" in args
    assert "--timeout=5m" in args
    assert "--focus=unsuspend" in args
    assert "--procs=4" in args  # upstream's E2E_NPROCS for the single-cluster suites
    assert not any(a.startswith("--focus") for a in suite_arguments(ConformanceOptions(), junit))
    assert "--procs=1" in suite_arguments(ConformanceOptions(procs=1), junit)
    skipping = suite_arguments(ConformanceOptions(skip=("a b", "c")), junit)
    assert [a for a in skipping if a.startswith("--skip")] == [
        "--skip=a b",
        "--skip=c",
    ]


def test_suite_environment_points_at_the_manager_and_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIND_CLUSTER_NAME", "kind")
    monkeypatch.setenv("E2E_KIND_VERSION", "kindest/node:v1.36")
    env = suite_environment(tmp_path / "manager.kubeconfig", tmp_path / "tree", tmp_path / "a")
    assert env["KUBECONFIG"] == str(tmp_path / "manager.kubeconfig")
    assert env["KUEUE_NAMESPACE"] == "kueue-system"
    # upstream takes filepath.Dir(PROJECT_DIR) as the project root.
    assert Path(env["PROJECT_DIR"]).parent == tmp_path / "tree"
    assert env["ARTIFACTS"] == str(tmp_path / "a")
    assert "KIND_CLUSTER_NAME" not in env and "E2E_KIND_VERSION" not in env


def test_the_tree_resolves_the_suites_relative_paths(tmp_path: Path) -> None:
    module = tmp_path / "kueue@v0.19.2"
    for image in ("agnhost", "redis", "spark"):
        (module / "hack/testing" / image).mkdir(parents=True)
        (module / "hack/testing" / image / "Dockerfile").write_text(f"FROM {image}:1\n")
    kubectl_kueue = tmp_path / "kubectl-kueue"
    kubectl_kueue.write_text("")
    tree = tmp_path / "tree"
    cwd = prepare_tree(tree, kubectl_kueue, module)
    # suite_test.go: kueuectlPath = ../../../../bin/kubectl-kueue from the package dir.
    assert (cwd / "../../../../bin/kubectl-kueue").resolve() == kubectl_kueue.resolve()
    assert (tree / "Makefile").exists()
    assert (tree / "hack/testing/agnhost/Dockerfile").read_text() == "FROM agnhost:1\n"
    assert (tree / "hack/testing/redis/Dockerfile").read_text() == "FROM redis:1\n"
    prepare_tree(tree, kubectl_kueue, module)  # again: idempotent


def test_stand_ins_select_their_own_pods_and_the_hub_holds_upstreams_lease() -> None:
    deployment = deployment_manifest()
    service = webhook_service_manifest()
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["metadata"]["name"] == "kueue-controller-manager"
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert service["metadata"]["name"] == "kueue-webhook-service"
    assert service["spec"]["selector"].items() <= pod_labels.items()


def test_the_hub_runs_upstreams_e2e_configuration_in_upstreams_namespace_and_lease() -> None:
    upstream = {
        "leaderElection": {"leaderElect": True},
        "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
        "integrations": {"frameworks": ["batch/job", "ray.io/rayservice", "pod"]},
    }
    config, dropped = hub_configuration(
        upstream, Path("/certs"), lambda name: name != "ray.io/rayservice"
    )
    assert dropped == ["ray.io/rayservice"]
    assert config["integrations"]["frameworks"] == ["batch/job", "pod"]
    assert config["fairSharing"] == upstream["fairSharing"]
    assert config["namespace"] == "kueue-system"
    assert config["leaderElection"] == {"leaderElect": True, "resourceName": LEADER_ELECTION_ID}
    assert config["webhook"] == {"certDir": "/certs"}
    assert upstream["integrations"]["frameworks"][1] == "ray.io/rayservice"  # not mutated


def test_the_conformance_fleet_has_upstreams_instance_type_nodes_and_no_workers() -> None:
    spec = conformance_fleet_spec()
    assert spec.workers == ()
    labels = [group.labels.get("instance-type") for group in spec.manager.node_groups]
    assert labels == ["on-demand", "spot"]


def test_the_conformance_tool_is_built_only_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conformance = toolchain.tool("conformance")
    assert conformance.on_request
    assert {b for b, _ in conformance.test_binaries} <= set(conformance.binaries)
    assert "sigs.k8s.io/kueue v0.19.2" in (conformance.module_dir / "go.mod").read_text()
    monkeypatch.setenv("FLEETQ_TOOLS_DIR", str(tmp_path))
    built: list[str] = []
    monkeypatch.setattr(toolchain, "is_current", lambda t: True)
    report = toolchain.build_tools(None, progress=built.append)
    assert "conformance" not in report.skipped
    assert "conformance" in toolchain.build_tools(["conformance"], progress=built.append).skipped


def test_the_failure_line_skips_gomegas_scaffolding() -> None:
    junit = """<testsuites><testsuite>
      <testcase name="[It] sts" status="failed"><failure>[FAILED] Timed out after 10.001s.
  The function passed to Eventually failed at statefulset_test.go:511 with:
  Expected success, but got an error:
      &lt;*errors.StatusError | 0x3075b56560a0&gt;:
      workloads.kueue.x-k8s.io "statefulset-sts-b5374" not found
  In [It] at: statefulset_test.go:513 @ 12/01/26</failure></testcase>
  <testcase name="[It] get" status="failed"><failure>[FAILED] Expected success, but got an error:
      &lt;*errors.StatusError | 0x1&gt;:
      the server could not find the requested resource</failure></testcase>
    </testsuite></testsuites>"""
    messages = [spec.message for spec in summarize(junit).failed]
    assert messages == [
        'Timed out after 10.001s. — workloads.kueue.x-k8s.io "statefulset-sts-b5374" not found',
        "the server could not find the requested resource",
    ]


def test_each_suite_has_its_binary_its_default_filter_and_its_upstream_configuration() -> None:
    tool = toolchain.tool("conformance")
    for suite in SUITES.values():
        assert suite.binary in tool.binaries
        assert suite.configuration.name == "controller_manager_config.yaml"
    extended = suite_named("extended")
    assert extended is EXTENDED and suite_named("singlecluster/extended") is EXTENDED
    args = suite_arguments(ConformanceOptions(suite=extended), Path("/r.xml"))
    assert f"--label-filter={EXTENDED.default_label_filter}" in args
    assert "feature:appwrapper" not in EXTENDED.default_label_filter  # fleetq has no kind
    assert EXTENDED.junit_name == "junit-singlecluster-extended.xml"
    with pytest.raises(KeyError, match="unknown suite 'dra'; choose one of: baseline"):
        suite_named("dra")


def test_extended_stands_in_for_each_operators_deployment_where_upstream_waits() -> None:
    from devfleet.operators.catalog import OPERATORS

    assert set(EXTENDED.operators) <= set(OPERATORS)
    assert operator_stand_ins(BASELINE) == []
    stand_ins = {(s.namespace, s.name) for s in operator_stand_ins(EXTENDED)}
    # test/util/e2e.go of v0.19.2: the Deployments its BeforeSuite waits for.
    assert ("jobset-system", "jobset-controller-manager") in stand_ins
    assert ("default", "kuberay-operator") in stand_ins
    assert ("kubeflow-system", "kubeflow-trainer-controller-manager") in stand_ins
    kueue_selector = webhook_service_manifest()["spec"]["selector"]
    for namespace, name in stand_ins:
        deployment = deployment_manifest(namespace, name)
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["metadata"] == {**deployment["metadata"], "name": name}
        assert deployment["metadata"]["namespace"] == namespace
        assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        assert not kueue_selector.items() <= pod_labels.items()  # not Kueue's webhook pods


def test_kuberay_specs_get_upstreams_ray_image_from_its_dockerfile(tmp_path: Path) -> None:
    dockerfile = tmp_path / "hack/testing/ray/Dockerfile"
    dockerfile.parent.mkdir(parents=True)
    dockerfile.write_text("# ray\nFROM rayproject/ray:2.56.0@sha256:5ded AS base\nRUN true\n")
    assert operator_environment(EXTENDED, tmp_path) == {
        "KUBERAY_RAY_IMAGE": "rayproject/ray:2.56.0"
    }
    assert operator_environment(BASELINE, tmp_path) == {}
    env = suite_environment(tmp_path / "k", tmp_path / "t", tmp_path / "a", {"X": "1"})
    assert env["X"] == "1"
    with pytest.raises(ConformanceError, match="no FROM line"):
        ray_image("RUN true\n")
