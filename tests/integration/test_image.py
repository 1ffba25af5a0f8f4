"""The fleetq image that `make image` builds, run with podman the way the charts run it.

1. The image: non-root with the charts' UID, `fleetq` as entrypoint, no compiler and no
   package cache inside, a bill of materials listing what is inside, and the OCI archive
   runs by itself (`podman run oci-archive:...`).
2. The hub chart's Deployment as a container (chart_container: the chart's args, env,
   user, read-only root, dropped capabilities, ConfigMap and emptyDir volumes, the
   ServiceAccount's token/CA/namespace at the in-cluster path, KUBERNETES_SERVICE_HOST/PORT)
   on the session fleet's manager: it serves /readyz and /metrics on the chart's ports,
   takes its Lease as the pod, admits a queued Job and starts it, with no request refused.
3. The worker chart's Deployment likewise on a worker: the agent reports capacity under
   the chart's clusterName, holds its Lease as the pod, and marks the report stopped on
   SIGTERM.
4. Without the ServiceAccount mount the hub exits at once and says why.

The chart's webhooks are narrowed to a label nothing carries (the manager is shared, and
the apiserver cannot reach a Service here); the hub still serves them with its internal
certificates. podman missing: skipped with an instruction, or failed under CI.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devfleet.chart_install import helm_install, helm_uninstall, mint_identity, service_account_of
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.polling import until
from devfleet.toolchain import binary_path
from tests.integration.chart_container import (
    REPO,
    Container,
    ServiceAccountToken,
    apiserver_env,
    build_image,
    image_version,
    pod_flags,
    podman,
    require_podman,
    running,
)
from tests.integration.test_charts import (
    TEST_LABEL,
    free_port,
    kueue_objects,
    kueue_path,
    queued_job,
    remove_without_finalizers,
)
from tests.unit.charts.image_constraints import canonical, read_pins

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]  # a cold build: minutes
START_TIMEOUT_SECONDS = 90.0
ADMISSION_TIMEOUT_SECONDS = 60.0
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "make", "ld")


@pytest.fixture(scope="module")
def image() -> str:
    require_podman()
    return build_image()


def _shell(image: str, script: str) -> str:
    result = podman("run", "--rm", "--network=none", "--entrypoint=/bin/sh", image, "-c", script)
    return result.stdout


def test_the_image_is_minimal_non_root_and_its_archive_runs(image: str) -> None:
    config = json.loads(podman("image", "inspect", image).stdout)[0]["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["fleetq"]
    assert _shell(image, "id -u; id -g").split() == ["65532", "65532"]
    found = _shell(image, " ; ".join(f"command -v {tool} || true" for tool in COMPILERS))
    assert found.strip() == "", f"compilers in the image: {found}"
    caches = _shell(
        image,
        "find / -xdev \\( -name '*.deb' -o -path '*/.cache/pip' -o -name '*_Packages*' "
        "-o -name '*cache.bin' -o -path /opt/fleetq/bin/pip \\) -print 2>/dev/null; true",
    )
    assert caches.strip() == "", f"package caches in the image: {caches}"

    version = image_version()
    bom = json.loads((REPO / "dist" / f"fleetq-{version}.sbom.json").read_text())
    python = {canonical(p["name"]): p["version"] for p in bom["python"]["packages"]}
    assert python.pop("fleetq") == version
    assert python == read_pins(), "the image holds exactly the pinned dependencies"
    assert "pip" not in python, "pip is left in the runtime venv"
    debian = {p["name"] for p in bom["debian"]}
    assert {"python3", "libc6", "ca-certificates"} <= debian
    assert not debian & {"gcc", "apt", "perl"}, "build tools in the base"

    archive = REPO / "dist" / f"fleetq-{version}.oci.tar"
    from_archive = podman("run", "--rm", "--network=none", f"oci-archive:{archive}", "version")
    assert from_archive.stdout.strip() == f"fleetq {version}"


def _service_account_token(
    access: ClusterAccess,
    manifest: list[dict[str, Any]],
    namespace: str,
    release: str,
    workdir: Path,
) -> Path:
    """A TokenRequest token of the release's ServiceAccount, laid out as the kubelet does."""
    identity = mint_identity(
        access,
        namespace=namespace,
        service_account=service_account_of(manifest),
        release=release,
        path=workdir / "identity.kubeconfig",
        lifetime_seconds=600,
    )
    document = yaml.safe_load(identity.kubeconfig.read_text())
    cluster = document["clusters"][0]["cluster"]
    token = ServiceAccountToken(
        token=document["users"][0]["user"]["token"],
        ca_pem=base64.b64decode(cluster["certificate-authority-data"]),
        namespace=namespace,
    )
    return token.write(workdir / "serviceaccount")


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), ""
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""


def _wait_ready(container: Container, port: int, what: str) -> None:
    def ready() -> bool:
        code = container.exit_code()
        if code is not None:
            raise AssertionError(f"{what} exited {code}:\n{container.logs()}")
        return _get(port, "/readyz")[0] == 200

    until(ready, f"{what}'s /readyz", START_TIMEOUT_SECONDS)


def _refusals(log: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if ("HTTP 403" in line or "is forbidden" in line)
        and "because it is being terminated" not in line
    ]


def _deployment(manifest: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [o for o in manifest if o["kind"] == "Deployment"]
    return deployment


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition["type"] == kind:
            return dict(condition)
    return None


@pytest.fixture
def cleanup() -> Iterator[list[Callable[[], None]]]:
    """Undo steps, run last-in first-out whatever the test did."""
    steps: list[Callable[[], None]] = []
    yield steps
    for step in reversed(steps):
        try:
            step()
        except Exception as error:  # best effort: the fleet goes away with the session
            print(f"cleanup: {error}")


def test_the_hub_image_admits_a_job_from_inside_its_container(
    image: str,
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
    cleanup: list[Callable[[], None]],
    tmp_path: Path,
) -> None:
    manager = kueue_crds.manager
    admin = kube_rest[manager.name]
    hub_namespace = namespace_factory("img-hub", clusters=(manager,))
    work = namespace_factory("img-work", clusters=(manager,))
    release = f"hub-{uuid.uuid4().hex[:6]}"
    marker = {"matchLabels": {TEST_LABEL: uuid.uuid4().hex}}
    ports = {"health": free_port(), "metrics": free_port(), "webhook": free_port()}
    values = {
        "image": {"repository": "localhost/fleetq"},
        "ports": ports,
        "webhook": {"namespaceSelector": marker, "objectSelector": marker},
    }
    manifest = helm_install(
        manager, "fleetq-hub", release, hub_namespace, values, tmp_path / "v.yaml"
    )
    cleanup.append(lambda: helm_uninstall(manager, release, hub_namespace))
    deployment = _deployment(manifest)
    (container_spec,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container_spec["image"] == f"localhost/fleetq:{image_version()}" == image
    config_map = next(o for o in manifest if o["kind"] == "ConfigMap")
    pod_name = f"{release}-7d9f-0"
    flags, args = pod_flags(
        deployment,
        pod_name=pod_name,
        namespace=hub_namespace,
        config_maps={config_map["metadata"]["name"]: config_map["data"]},
        workdir=tmp_path,
    )
    account = _service_account_token(manager, manifest, hub_namespace, release, tmp_path)
    objects = kueue_objects(work, release)
    job_path = f"/apis/batch/v1/namespaces/{work}/jobs"
    workload_path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{work}/workloads"

    def remove_queue_objects() -> None:
        admin.delete(f"{job_path}/train")
        for item in admin.get(workload_path)["items"]:
            remove_without_finalizers(admin, f"{workload_path}/{item['metadata']['name']}")
        for obj in reversed(objects):
            remove_without_finalizers(admin, kueue_path(obj))

    cleanup.append(remove_queue_objects)
    with running(
        image, flags, args, env=apiserver_env(manager.server), service_account=account
    ) as hub:
        _wait_ready(hub, ports["health"], "the hub container")
        status, metrics = _get(ports["metrics"], "/metrics")
        assert status == 200 and "kueue_" in metrics, metrics[:500]
        _assert_serves_webhooks_with_its_own_certificate(admin, manifest, ports["webhook"])
        for obj in objects:
            admin.request("POST", kueue_path(obj).rsplit("/", 1)[0], obj)
        admin.request("POST", job_path, queued_job("train", work).obj())

        def admitted() -> dict[str, Any] | None:
            for workload in admin.get(workload_path)["items"]:
                condition = _condition(workload, "Admitted")
                if condition and condition["status"] == "True":
                    return dict(workload)
            return None

        workload = until(admitted, "the Job's Workload admitted", ADMISSION_TIMEOUT_SECONDS)
        assert workload["metadata"]["ownerReferences"][0]["name"] == "train"
        until(
            lambda: admin.get(f"{job_path}/train")["spec"]["suspend"] is False,
            "the Job started",
            ADMISSION_TIMEOUT_SECONDS,
        )
        lease = admin.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{hub_namespace}/leases/"
            "c1f6bfd2.kueue.x-k8s.io"
        )
        assert lease["spec"]["holderIdentity"].startswith(pod_name), lease["spec"]
        status, metrics = _get(ports["metrics"], "/metrics")
        assert "kueue_admitted_workloads_total" in metrics
        log = hub.logs()
        assert hub.stop() == 0, log
    assert _refusals(log) == [], "\n".join(_refusals(log))


def _assert_serves_webhooks_with_its_own_certificate(
    admin: Any, manifest: list[dict[str, Any]], port: int
) -> None:
    """Internal certificates: the hub issued a CA into the chart's Secret, wrote the serving
    certificate into the in-memory emptyDir, and serves TLS for the webhook Service's name."""
    service = next(
        o for o in manifest if o["kind"] == "Service" and "webhook" in o["metadata"]["name"]
    )
    namespace, name = service["metadata"]["namespace"], service["metadata"]["name"]
    secret_path = (
        f"/api/v1/namespaces/{namespace}/secrets/{name.removesuffix('-service')}-server-cert"
    )

    def ca_pem() -> str | None:
        try:
            data = admin.get(secret_path).get("data") or {}
        except admin.Error:
            return None
        return base64.b64decode(data["ca.crt"]).decode() if "ca.crt" in data else None

    authority = until(ca_pem, "the webhook CA in the chart's Secret", START_TIMEOUT_SECONDS)
    context = ssl.create_default_context(cadata=authority)

    def handshake() -> bool:
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=3) as raw,
                context.wrap_socket(raw, server_hostname=f"{name}.{namespace}.svc"),
            ):
                return True
        except (OSError, ssl.SSLError):
            return False

    until(handshake, "a TLS handshake with the hub's webhook server", START_TIMEOUT_SECONDS)


def test_the_agent_image_reports_capacity_from_inside_its_container(
    image: str,
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
    cleanup: list[Callable[[], None]],
    tmp_path: Path,
) -> None:
    worker = kueue_crds.workers[0]
    admin = kube_rest[worker.name]
    namespace = namespace_factory("img-agent", clusters=(worker,))
    release = f"worker-{uuid.uuid4().hex[:6]}"
    report_name = f"img-{release}"
    ports = {"health": free_port(), "metrics": free_port()}
    values = {
        "image": {"repository": "localhost/fleetq"},
        "ports": ports,
        "clusterName": report_name,
    }
    manifest = helm_install(
        worker, "fleetq-worker", release, namespace, values, tmp_path / "v.yaml"
    )
    cleanup.append(lambda: helm_uninstall(worker, release, namespace))
    report_path = f"/apis/fleetq.dev/v1alpha1/workercapacities/{report_name}"
    cleanup.append(lambda: admin.delete(report_path))
    pod_name = f"{release}-5c4b-0"
    flags, args = pod_flags(
        _deployment(manifest),
        pod_name=pod_name,
        namespace=namespace,
        config_maps={},
        workdir=tmp_path,
    )
    account = _service_account_token(worker, manifest, namespace, release, tmp_path)
    with running(
        image, flags, args, env=apiserver_env(worker.server), service_account=account
    ) as agent:
        _wait_ready(agent, ports["health"], "the agent container")

        def reporting() -> dict[str, Any] | None:
            try:
                report: dict[str, Any] = admin.get(report_path)
            except admin.Error as error:
                if error.status == 404:
                    return None
                raise
            condition = _condition(report, "Reporting")
            return report if condition and condition["status"] == "True" else None

        report = until(reporting, "the agent's WorkerCapacity, Reporting=True", 60)
        assert report["spec"]["clusterName"] == report_name
        lease = admin.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/fleetq-agent.fleetq.dev"
        )
        assert lease["spec"]["holderIdentity"] == pod_name
        assert _get(ports["metrics"], "/metrics")[0] == 200
        log = agent.logs()
        assert agent.stop() == 0, log
    stopped = _condition(admin.get(report_path), "Reporting")
    assert stopped is not None and stopped["reason"] == "AgentStopped", stopped
    assert _refusals(log) == [], "\n".join(_refusals(log))


def test_the_hub_image_without_a_service_account_says_so_and_exits(
    image: str, tmp_path: Path
) -> None:
    """A pod whose ServiceAccount token is not mounted (automountServiceAccountToken off,
    or a runtime that does not project it) must fail fast and name the cause."""
    helm = binary_path("helm")
    if not helm.exists():
        pytest.fail(f"helm is not built ({helm}); run `make tools`", pytrace=False)
    rendered = subprocess.run(
        [str(helm), "template", "hub", str(REPO / "charts" / "fleetq-hub"), "-n", "kueue-system"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    manifest = [doc for doc in yaml.safe_load_all(rendered) if doc]
    config_map = next(o for o in manifest if o["kind"] == "ConfigMap")
    flags, args = pod_flags(
        _deployment(manifest),
        pod_name="hub-0",
        namespace="kueue-system",
        config_maps={config_map["metadata"]["name"]: config_map["data"]},
        workdir=tmp_path,
    )
    env = apiserver_env("https://127.0.0.1:6443")
    with running(image, flags, args, env=env, service_account=None) as hub:
        (code,) = until(
            lambda: None if (exited := hub.exit_code()) is None else (exited,),
            "the hub container to exit",
            START_TIMEOUT_SECONDS,
        )
        log = hub.logs()
    assert code == 2, log
    assert "fleetq hub: not running in a pod with a service account" in log, log
    assert "/var/run/secrets/kubernetes.io/serviceaccount/token" in log, log
    assert "Traceback" not in log, log
