"""`fleetq dev conformance`: upstream Kueue's own e2e suites, run against fleetq on a local fleet.

The `singlecluster/baseline` and `singlecluster/extended` ginkgo binaries of
`sigs.k8s.io/kueue` v0.19.2 (built by `fleetq dev tools conformance`;
devfleet.conformance_suites) talk to their cluster only through the API, so they can judge
fleetq the way they judge Kueue. This module brings up what a suite expects and nothing
more (docs/conformance.md):

- a full fleet (default name `conformance`) whose manager has kwok nodes labelled like
  upstream's kind cluster (`instance-type: on-demand` and `spot`), no workers, and the
  job operators the suite drives (real ones, out of cluster; none for baseline);
- fleetq's CRDs (charts/*/crds); the hub out of cluster, webhooks registered by URL,
  leader election on upstream's Lease in `kueue-system` (`conformance_stand_in`);
- the presence-only stand-ins upstream's readiness checks need (Deployment
  `kueue-controller-manager`, Service `kueue-webhook-service`, and for extended each
  operator's Deployment in upstream's namespace for it);
- a work tree shaped like upstream's checkout (a `Makefile` marks the project root,
  `bin/kubectl-kueue`, `hack/testing/agnhost/Dockerfile` copied from the module), so the
  suite's relative paths resolve; then the binary under the ginkgo CLI (parallel
  processes, as upstream runs it) with a label filter, a JUnit report and a summary
  (`conformance_report`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet.aggregated_api import (
    VISIBILITY_GROUP,
    VISIBILITY_VERSIONS,
    api_service_route,
    machine_ipv4,
)
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.cluster_objects import (
    create_if_absent,
    delete_webhook_configurations,
    deployment_available,
)
from devfleet.conformance_report import SuiteSummary, summarize_file
from devfleet.conformance_stand_in import (
    DEPLOYMENT,
    KUEUE_NAMESPACE,
    LEADER_ELECTION_ID,
    deployment_manifest,
    manager_config_map_manifest,
    namespace_manifest,
    webhook_service_manifest,
)
from devfleet.conformance_suites import BASELINE, Suite, operator_stand_ins
from devfleet.fleet import Fleet, fleet_home
from devfleet.fleet_crds import install_crds
from devfleet.fleet_process import FleetProcess
from devfleet.fleet_spec import FleetSpec, parse_fleet_spec
from devfleet.operators.catalog import resolve, tools_of
from devfleet.polling import until
from devfleet.ports import allocate_ports
from devfleet.toolchain import REPO_ROOT, binary_path, build_tools, tool
from devfleet.upstream_kueue import kubectl

Say = Callable[[str], None]

FLEET_TOOLS = ("kubernetes", "etcd", "kwok", "helm", "conformance", "ginkgo")
"""The tools every suite needs; a suite's operators add theirs."""
VISIBILITY_SERVICE = "kueue-visibility-server"
"""Upstream's name for the Service behind its visibility APIService."""
VISIBILITY_API_SERVICES = tuple(f"{v}.{VISIBILITY_GROUP}" for v in VISIBILITY_VERSIONS)

# Upstream's kind cluster (hack/testing/kind-cluster.yaml): one worker node labelled
# instance-type=on-demand and one spot; specs' ResourceFlavors select those labels.
CONFORMANCE_FLEET: dict[str, Any] = {
    "manager": {
        "nodeGroups": [
            {
                "name": "on-demand",
                "count": 1,
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "labels": {"instance-type": "on-demand"},
            },
            {
                "name": "spot",
                "count": 1,
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "labels": {"instance-type": "spot"},
            },
        ]
    },
    "workers": [],
}


class ConformanceError(RuntimeError):
    """The suite could not be started; the message says which step and where its log is."""


@dataclass(frozen=True, slots=True)
class ConformanceOptions:
    fleet_name: str | None = None
    """None: the suite's own (`Suite.fleet_name`)."""
    suite: Suite = BASELINE
    label_filter: str | None = None
    """None: the suite's default (every feature fleetq has a kind for)."""
    focus: str | None = None
    skip: tuple[str, ...] = ()
    """Spec-name regexps ginkgo skips (each reported in the JUnit report as skipped)."""
    suite_timeout: str = "20m"
    procs: int = 4
    """Parallel ginkgo processes, as upstream's e2e targets run its single-cluster suites
    (E2E_NPROCS=4); specs marked Serial still run alone, at the end."""
    keep: bool = False
    """Leave the fleet and the hub running afterwards."""
    dispatcher: str | None = None
    """The hub's `multiKueue.dispatcherName`; None: upstream's e2e Configuration sets
    none, so fleetq's default (`fleetq.dev/capacity-aware`) dispatches."""

    @property
    def effective_fleet_name(self) -> str:
        return self.fleet_name or self.suite.fleet_name

    @property
    def effective_label_filter(self) -> str:
        return self.label_filter or self.suite.default_label_filter


def conformance_fleet_spec() -> FleetSpec:
    return parse_fleet_spec(CONFORMANCE_FLEET)


def suite_arguments(options: ConformanceOptions, junit: Path) -> list[str]:
    """The ginkgo CLI's flags of one run (pure, for the tests)."""
    args = [
        f"--procs={options.procs}",
        *(
            [f"--label-filter={options.effective_label_filter}"]
            if options.effective_label_filter
            else []
        ),
        f"--junit-report={junit}",
        f"--timeout={options.suite_timeout}",
        "--no-color",
        "-v",
    ]
    if options.focus:
        args.append(f"--focus={options.focus}")
    args += [f"--skip={pattern}" for pattern in options.skip]
    return args


def suite_environment(
    kubeconfig: Path, tree: Path, artifacts: Path, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment of the suite: the manager's kubeconfig, upstream's namespace, where the
    project root and the artifacts are, and what the suite's operators' specs read
    (`operator_environment`) (pure, for the tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIND", "E2E_"))}
    env.update(extra or {})
    env.update(
        {
            "KUBECONFIG": str(kubeconfig),
            "KUEUE_NAMESPACE": KUEUE_NAMESPACE,
            # upstream's getProjectBaseDir takes filepath.Dir(PROJECT_DIR).
            "PROJECT_DIR": str(tree / "Makefile"),
            "ARTIFACTS": str(artifacts),
        }
    )
    return env


def hub_configuration(
    upstream: dict[str, Any],
    cert_dir: Path,
    known: Callable[[str], bool],
    dispatcher: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Upstream's e2e Configuration for the hub, and the frameworks dropped from it.

    Kept: everything (fleetq reports what it ignores). Set: upstream's namespace and
    leader-election Lease, so the readiness check sees the hub itself leading; the webhook
    certificate directory. Dropped: frameworks fleetq does not know at all (it refuses
    them; ones it knows but does not run yet are only warned about)."""
    config = dict(upstream)
    integrations = dict(config.get("integrations") or {})
    frameworks = list(integrations.get("frameworks") or [])
    dropped = [name for name in frameworks if not known(name)]
    if frameworks:
        integrations["frameworks"] = [name for name in frameworks if known(name)]
        config["integrations"] = integrations
    config["namespace"] = KUEUE_NAMESPACE
    config["leaderElection"] = {
        **dict(config.get("leaderElection") or {}),
        "leaderElect": True,
        "resourceName": LEADER_ELECTION_ID,
    }
    config["webhook"] = {**dict(config.get("webhook") or {}), "certDir": str(cert_dir)}
    if dispatcher is not None:
        config["multiKueue"] = {
            **dict(config.get("multiKueue") or {}),
            "dispatcherName": dispatcher,
        }
    return config, dropped


RAY_DOCKERFILE = Path("hack/testing/ray/Dockerfile")
"""Upstream's Ray test image, by its `FROM` line (the Makefile's RAY_VERSION)."""


def ray_image(dockerfile: str) -> str:
    """`rayproject/ray:<version>` from the Dockerfile's FROM line, digest dropped (pure)."""
    for line in dockerfile.splitlines():
        if line.startswith("FROM "):
            return line.split()[1].split("@", 1)[0]
    raise ConformanceError(f"no FROM line in upstream's {RAY_DOCKERFILE}")


def operator_environment(suite: Suite, module_dir: Path) -> dict[str, str]:
    """Variables the suite's operator specs read: KubeRay's specs take the Ray image from
    KUBERAY_RAY_IMAGE (upstream's e2e script sets it). kwok pods never pull it."""
    if "kuberay" not in suite.operators:
        return {}
    return {"KUBERAY_RAY_IMAGE": ray_image((module_dir / RAY_DOCKERFILE).read_text())}


TRAINER_RUNTIMES = Path("manifests/overlays/runtimes")
"""Trainer's own ClusterTrainingRuntimes (torch-distributed, ...), which upstream's e2e
installs after Trainer and its TrainJob specs name."""


def _install_operator_fixtures(member: ClusterAccess, suite: Suite, say: Say) -> None:
    if "trainer" in suite.operators:
        from devfleet.operators.process import operator_module_dir
        from devfleet.operators.trainer import TRAINER

        runtimes = operator_module_dir(TRAINER) / TRAINER_RUNTIMES
        kubectl(member.kubeconfig, "apply", "--server-side", "-k", str(runtimes))
        say(f"Trainer's ClusterTrainingRuntimes from its module ({TRAINER_RUNTIMES})")


def known_to_fleetq(framework: str) -> bool:
    from integrations.framework.registry import UnknownFramework
    from integrations.registry import REGISTRY

    try:
        REGISTRY.unsupported([framework])
    except UnknownFramework:
        return False
    return True


TEST_IMAGES = ("agnhost", "redis", "spark")
"""Images whose names the suites read from `hack/testing/<image>/Dockerfile`
(`util.getCachedDockerImage`); kwok never pulls them."""


def prepare_tree(
    tree: Path, kubectl_kueue: Path, module_dir: Path, package_dir: Path = BASELINE.package_dir
) -> Path:
    """Upstream's checkout shape, for the suite's relative paths; returns the suite's cwd."""
    cwd = tree / package_dir
    cwd.mkdir(parents=True, exist_ok=True)
    (tree / "Makefile").write_text("# marks the project root for upstream's e2e helpers\n")
    (tree / "bin").mkdir(exist_ok=True)
    link = tree / "bin" / "kubectl-kueue"
    link.unlink(missing_ok=True)
    link.symlink_to(kubectl_kueue)
    for image in TEST_IMAGES:
        dockerfile = Path("hack/testing") / image / "Dockerfile"
        (tree / dockerfile).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module_dir / dockerfile, tree / dockerfile)
    return cwd


def go_module_dir(module: str, version: str) -> Path:
    """Where the Go module cache holds `module@version` (downloaded if it is not yet)."""
    import json

    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOTOOLCHAIN": "local"},
    )
    if done.returncode != 0:
        raise ConformanceError(f"go mod download {module}@{version} failed:\n{done.stderr}")
    return Path(json.loads(done.stdout)["Dir"])


def _fleet_description(suite: Suite) -> tuple[FleetSpec, dict[str, tuple[str, ...]], str]:
    """The fleet a suite runs on, its apiservers' extra certificate names, and a phrase."""
    if suite.workers:
        from devfleet.conformance_multikueue import MULTIKUEUE_FLEET, apiserver_sans

        return (
            parse_fleet_spec(MULTIKUEUE_FLEET),
            apiserver_sans(),
            "a manager and two workers, each with one node like upstream's kind worker",
        )
    return conformance_fleet_spec(), {}, "manager with on-demand and spot nodes"


def run_conformance(options: ConformanceOptions, say: Say) -> SuiteSummary:
    suite = options.suite
    operators = resolve(suite.operators)
    build_tools([*FLEET_TOOLS, *tools_of(operators)], progress=say)
    name = options.effective_fleet_name
    fleet = Fleet(name)
    started_fleet = False
    if fleet.record() is None or not fleet.answering():
        spec, sans, shape = _fleet_description(suite)
        with_operators = f" and {', '.join(suite.operators)}" if suite.operators else ""
        say(f"fleet {name!r}: starting ({shape}{with_operators})")
        fleet.up(
            spec,
            lite=False,
            progress=say,
            operators=suite.operators,
            kubelet_exec=True,
            apiserver_sans=sans,
        )
        started_fleet = True
    running = fleet.access()
    if running.lite:
        raise ConformanceError(f"fleet {name!r} is lite; the suite needs a full one")
    if len(running.workers) < suite.workers:
        raise ConformanceError(
            f"fleet {name!r} has {len(running.workers)} workers, {suite.name} needs"
            f" {suite.workers}; stop it (`fleetq dev down --name {name}`) or pick another --name"
        )
    workdir = fleet.dir / "conformance"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    hub: FleetProcess | None = None
    workers: Any = None
    try:
        module_dir = go_module_dir("sigs.k8s.io/kueue", tool("conformance").version)
        hub = _prepare_cluster(running, suite, workdir, module_dir, say, options.dispatcher)
        kubeconfig = running.manager.kubeconfig
        if suite.workers:
            from devfleet.conformance_multikueue import MultiKueueWorkers, write_suite_kubeconfig

            upstream = _upstream_configuration(module_dir, suite)
            workers = MultiKueueWorkers(
                running,
                lambda certs: hub_configuration(upstream, certs, known_to_fleetq)[0],
                workdir,
                say,
            )
            workers.start()
            kubeconfig = write_suite_kubeconfig(running, workdir / "kubeconfig")
            say(f"suite kubeconfig (contexts kind-kind-manager, kind-kind-worker1/2): {kubeconfig}")
        return _run_suite(running, kubeconfig, options, workdir, module_dir, say)
    finally:
        if workers is not None and not options.keep:
            workers.stop()
        if hub is not None and not options.keep and hub.stop() is None:
            # Killed, not stopped: nothing removed its fail-closed webhooks.
            delete_webhook_configurations(running.manager)
        if started_fleet and not options.keep:
            kept = keep_results(workdir, results_dir(name))
            say(f"results (JUnit report, logs): {kept}")
            say(f"fleet {name!r}: stopping")
            fleet.down(progress=say)
        elif options.keep:
            say(f"kept: fleet {name!r}, hub log {workdir / 'hub.log'}")


def results_dir(fleet_name: str) -> Path:
    """Where a run's report and logs are kept once the fleet it started is gone."""
    return fleet_home() / "conformance-results" / fleet_name


def keep_results(workdir: Path, destination: Path) -> Path:
    """Copy the run's files out of the fleet's directory, which `down` removes (the
    work tree's links to the binaries are left behind)."""
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(workdir, destination, ignore=shutil.ignore_patterns("tree"))
    return destination


def _upstream_configuration(module_dir: Path, suite: Suite) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((module_dir / suite.configuration).read_text())
    return loaded


def _prepare_cluster(
    running: RunningFleet,
    suite: Suite,
    workdir: Path,
    module_dir: Path,
    say: Say,
    dispatcher: str | None = None,
) -> FleetProcess:
    manager = running.manager
    install_crds(manager)
    say("fleetq CRDs established")
    create_if_absent(manager, namespace_manifest())
    create_if_absent(manager, webhook_service_manifest())
    create_if_absent(manager, deployment_manifest())
    for stand_in in operator_stand_ins(suite):
        create_if_absent(manager, namespace_manifest(stand_in.namespace))
        create_if_absent(manager, deployment_manifest(stand_in.namespace, stand_in.name))
    _install_operator_fixtures(manager, suite, say)
    config = workdir / "hub-config.yaml"
    upstream = _upstream_configuration(module_dir, suite)
    hub_config, dropped = hub_configuration(
        upstream, workdir / "hub-certs", known_to_fleetq, dispatcher
    )
    if dropped:
        say(f"upstream's e2e Configuration minus frameworks fleetq does not know: {dropped}")
    config.write_text(yaml.safe_dump(hub_config))
    if suite.workers:  # the MultiKueue suite reads integrations.frameworks from it
        create_if_absent(manager, manager_config_map_manifest(config.read_text()))
    health, metrics, webhook, visibility = allocate_ports(4)
    ip = machine_ipv4()
    visibility_ca = _write_visibility_certificate(workdir / "visibility-certs", ip)
    args = [
        *("hub", "--config", str(config), "--kubeconfig", str(manager.kubeconfig)),
        *("--health-port", str(health), "--metrics-port", str(metrics)),
        *("--webhook-url-host", "127.0.0.1", "--webhook-port", str(webhook)),
        *("--visibility-port", str(visibility)),
        *("--visibility-cert-dir", str(workdir / "visibility-certs")),
    ]
    hub = FleetProcess("fleetq hub", args, workdir / "hub.log", health)
    hub.start()
    try:
        until(hub.ready, "the fleetq hub ready (webhooks registered)", 120.0)
        for namespace, name in [
            (KUEUE_NAMESPACE, DEPLOYMENT),
            *((s.namespace, s.name) for s in operator_stand_ins(suite)),
        ]:
            until(
                functools.partial(deployment_available, manager, namespace, name),
                f"stand-in Deployment {namespace}/{name} available",
                120.0,
            )
    except BaseException:
        if hub.stop() is None:
            delete_webhook_configurations(manager)
        raise
    say(f"fleetq hub ready (pid {hub.pid}, log {hub.log_path}); stand-ins in {KUEUE_NAMESPACE}")
    try:
        for manifest in api_service_route(
            service=VISIBILITY_SERVICE,
            namespace=KUEUE_NAMESPACE,
            ip=ip,
            port=visibility,
            ca_pem=visibility_ca,
        ):
            create_if_absent(manager, manifest)
        until(
            lambda: _api_service_available(manager),
            f"APIServices {', '.join(VISIBILITY_API_SERVICES)} available (the hub's)",
            60.0,
        )
        _apply_user_roles(manager)
    except BaseException:
        if hub.stop() is None:
            delete_webhook_configurations(manager)
        raise
    say(
        f"visibility API: the hub at {ip}:{visibility}, behind {', '.join(VISIBILITY_API_SERVICES)}"
    )
    say("upstream's user roles (kueue-batch-admin-role, kueue-batch-user-role) from the chart")
    return hub


def _write_visibility_certificate(directory: Path, ip: str) -> bytes:
    """The hub's visibility serving certificate (the Service's DNS names and this
    machine's address); its CA, for the APIService's caBundle."""
    import datetime as dt

    from core.manager.webhook_certs import issue, service_dns_names

    names = [*service_dns_names(VISIBILITY_SERVICE, KUEUE_NAMESPACE), ip]
    bundle = issue(names, dt.datetime.now(dt.UTC), "fleetq-visibility")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(bundle.tls_cert)
    key = directory / "tls.key"
    key.write_bytes(bundle.tls_key)
    key.chmod(0o600)
    return bundle.ca_cert


def _api_service_available(member: ClusterAccess) -> bool:
    from kubernetes import client

    with member.api_client() as api_client:
        api = client.ApiregistrationV1Api(api_client)
        services = [api.read_api_service(name) for name in VISIBILITY_API_SERVICES]
    return all(
        any(c.type == "Available" and c.status == "True" for c in (s.status.conditions or []))
        for s in services
        if s.status is not None
    ) and all(s.status is not None for s in services)


def _apply_user_roles(member: ClusterAccess) -> None:
    """The hub chart's user ClusterRoles, rendered by helm, applied server-side."""
    rendered = subprocess.run(
        [
            str(binary_path("helm")),
            "template",
            "conformance",
            str(REPO_ROOT / "charts" / "fleetq-hub"),
            "--show-only",
            "templates/user-roles.yaml",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if rendered.returncode != 0:
        raise ConformanceError(f"helm template of the user roles failed:\n{rendered.stderr}")
    manifest = Path(member.kubeconfig).with_name("user-roles.yaml")
    manifest.write_text(rendered.stdout)
    kubectl(member.kubeconfig, "apply", "--server-side", "-f", str(manifest))


def _run_suite(
    running: RunningFleet,
    kubeconfig: Path,
    options: ConformanceOptions,
    workdir: Path,
    module_dir: Path,
    say: Say,
) -> SuiteSummary:
    suite = options.suite
    conformance = tool("conformance")
    binary = conformance.binary(suite.binary)
    tree = workdir / "tree"
    cwd = prepare_tree(tree, conformance.binary("kubectl-kueue"), module_dir, suite.package_dir)
    artifacts = workdir / "artifacts"
    artifacts.mkdir()
    junit = workdir / suite.junit_name
    log = workdir / "suite.log"
    # The ginkgo CLI runs a precompiled suite in the binary's own directory: link it into
    # the suite's package dir so upstream's relative paths resolve as in its checkout.
    linked = cwd / suite.binary
    linked.unlink(missing_ok=True)
    linked.symlink_to(binary)
    args = [str(binary_path("ginkgo")), "run", *suite_arguments(options, junit), str(linked)]
    say(
        f"running {suite.binary} ({options.effective_label_filter!r}, {options.procs} processes);"
        f" log {log}"
    )
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=suite_environment(
                kubeconfig,
                tree,
                artifacts,
                operator_environment(suite, module_dir),
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    say(f"suite exited {done.returncode} after {time.monotonic() - started:.0f}s")
    if not junit.exists():
        raise ConformanceError(f"the suite wrote no JUnit report; see {log}")
    summary = summarize_file(junit)
    say(f"JUnit report: {junit}")
    return summary
