"""The helm charts, installed with real helm into the session fleet, and the hub run with
nothing but the credentials of the hub chart's ServiceAccount.

1. `helm install` of fleetq-hub on the manager and fleetq-worker on worker-1 (a namespace
   and a unique release name each; uninstalled afterwards): every object of the release
   manifest exists on the cluster.
2. A token for the hub chart's ServiceAccount (TokenRequest) goes into a kubeconfig, and
   `fleetq hub` runs out of cluster with it and the Configuration from the chart's
   ConfigMap: it syncs every cache, takes its Lease, turns a queued Job into a Workload,
   admits it and starts the Job, with no request refused on the way.
3. The same identity is refused (403) outside its role: Secrets of other namespaces, any
   cluster-wide Secret list, deleting Jobs, deleting nodes (it reads them: nodes are
   topology domains). The worker chart's identity may write its WorkerCapacity and read
   nodes, and reads no Secrets.
4. The worker chart, installed the way the demo does it (devfleet.chart_install: replicas
   0, a TokenRequest kubeconfig): `fleetq agent` runs with nothing but that identity and
   does its whole job — takes its Lease in the release namespace, keeps its WorkerCapacity
   report, admits a Workload dispatched the way the MultiKueue manager creates it and
   unsuspends its Job, marks the report stopped on a clean exit — with no request refused;
   and the identity is refused what the agent never needs (Secrets, MultiKueue objects,
   creating ClusterQueues, deleting Jobs or nodes).

The manager is shared with other tests, and with failurePolicy Fail an installed webhook
nobody serves would block every Job: the release's webhooks are narrowed to objects and
namespaces carrying this test's label, which nothing else carries. The hub runs with
--no-webhooks (the apiserver could not reach a Service-based webhook from here anyway);
the webhook configurations and their Service are still checked to exist. The APIService is
left off: an unavailable aggregated API would disturb discovery for everyone else.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from devfleet.chart_install import (
    helm_install,
    helm_uninstall,
    service_account_of,
)
from devfleet.chart_install import mint_identity as mint_chart_identity
from devfleet.cluster_access import ClusterAccess, RunningFleet
from devfleet.polling import until
from devfleet.toolchain import binary_path
from tests.builders import (
    ClusterQueue,
    FlavorQuotas,
    Job,
    LocalQueue,
    ResourceFlavor,
    WorkerCapacity,
    Workload,
)

pytestmark = pytest.mark.integration

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
TEST_LABEL = "fleetq.dev/chart-test"
HUB_START_TIMEOUT_SECONDS = 90.0
ADMISSION_TIMEOUT_SECONDS = 60.0
TOO_MANY_REQUESTS_RETRIES = 10
PLURALS = {
    "ServiceAccount": "serviceaccounts",
    "ConfigMap": "configmaps",
    "Service": "services",
    "Deployment": "deployments",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}


def eventually(probe: Callable[[], T | None], *, timeout: float, what: str) -> T:
    return until(probe, what, timeout)


def object_path(obj: dict[str, Any]) -> str:
    group_version = obj["apiVersion"]
    prefix = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    namespace = obj["metadata"].get("namespace")
    if namespace:
        prefix += f"/namespaces/{namespace}"
    return f"{prefix}/{PLURALS[obj['kind']]}/{obj['metadata']['name']}"


@dataclass
class Release:
    """One installed chart: where, under which name, and what helm says it made."""

    name: str
    namespace: str
    access: ClusterAccess
    manifest: list[dict[str, Any]]

    def one(self, kind: str) -> dict[str, Any]:
        (found,) = [o for o in self.manifest if o["kind"] == kind]
        return found

    @property
    def service_account(self) -> str:
        return str(self.one("ServiceAccount")["metadata"]["name"])


class Helm:
    def __init__(self, tmp: Path) -> None:
        self.path = binary_path("helm")
        if not self.path.exists():
            pytest.fail(f"helm is not built ({self.path}); run `make tools`", pytrace=False)
        self.tmp = tmp

    def run(self, access: ClusterAccess, *args: str) -> str:
        result = subprocess.run(
            [str(self.path), "--kubeconfig", str(access.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"helm {' '.join(args)}: {result.stderr}"
        return result.stdout

    @contextlib.contextmanager
    def installed(
        self, chart: str, access: ClusterAccess, namespace: str, values: dict[str, Any]
    ) -> Iterator[Release]:
        name = f"{chart.removeprefix('fleetq-')}-{uuid.uuid4().hex[:6]}"
        values_file = self.tmp / f"{name}.yaml"
        values_file.write_text(yaml.safe_dump(values))
        chart_dir = str(REPO / "charts" / chart)
        self.run(access, "install", name, chart_dir, "-n", namespace, "-f", str(values_file))
        try:
            manifest = self.run(access, "get", "manifest", name, "-n", namespace)
            objects = [doc for doc in yaml.safe_load_all(manifest) if doc]
            yield Release(name, namespace, access, objects)
        finally:
            self.run(access, "uninstall", name, "-n", namespace)


class TokenRest:
    """Plain REST calls with one bearer token, as a pod of that ServiceAccount makes them."""

    def __init__(self, server: str, ca_pem: bytes, token: str) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cadata=ca_pem.decode())

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        """(HTTP status, decoded body); error statuses are returned, not raised. A busy
        apiserver's 429 is waited out (Retry-After), as every client does."""
        for _ in range(TOO_MANY_REQUESTS_RETRIES):
            status, decoded, retry_after = self._once(method, path, body)
            if status != 429:
                break
            time.sleep(retry_after)
        return status, decoded

    def _once(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any], float]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                return int(response.status), json.loads(response.read() or b"{}"), 0.0
        except urllib.error.HTTPError as error:
            retry_after = float(error.headers.get("Retry-After") or 1)
            return int(error.code), json.loads(error.read() or b"{}"), retry_after

    def status(self, method: str, path: str, body: Any = None) -> int:
        return self.call(method, path, body)[0]

    def username(self) -> str:
        """Who the apiserver takes this token for (SelfSubjectReview)."""
        status, review = self.call(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        assert status == 201, review
        return str(review["status"]["userInfo"]["username"])


@dataclass
class Identity:
    """A ServiceAccount's token as a kubeconfig (for `fleetq hub`) and as a REST client."""

    kubeconfig: Path
    rest: TokenRest


def mint_identity(
    admin: Any, access: ClusterAccess, namespace: str, account: str, path: Path
) -> Identity:
    """A TokenRequest token (10 minutes) for `account`, with the cluster's CA and nothing
    else from the fleet's admin kubeconfig."""
    token = admin.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )["status"]["token"]
    source = yaml.safe_load(access.kubeconfig.read_text())
    context = next(c for c in source["contexts"] if c["name"] == source["current-context"])
    cluster = next(c for c in source["clusters"] if c["name"] == context["context"]["cluster"])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fleet", "cluster": cluster["cluster"]}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": "fleet", "user": account}}],
        "current-context": account,
    }
    path.write_text(yaml.safe_dump(config))
    ca_pem = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    return Identity(path, TokenRest(cluster["cluster"]["server"], ca_pem, token))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def hub_process(config: Path, kubeconfig: Path, log: Path) -> Iterator[int]:
    """`fleetq hub` with only `kubeconfig`'s identity; yields its health port once ready."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    command = [
        sys.executable,
        "-m",
        "cli.main",
        "hub",
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--health-port={port}",
        "--metrics-port=-1",
        "--no-webhooks",
        "--identity=chart-test",
    ]
    with log.open("w") as sink:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"fleetq hub exited {process.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        eventually(ready, timeout=HUB_START_TIMEOUT_SECONDS, what="the hub's /readyz")
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def kueue_objects(namespace: str, suffix: str) -> list[dict[str, Any]]:
    """A flavor, a ClusterQueue that admits only from `namespace`, and its LocalQueue."""
    flavor, queue = f"chart-rf-{suffix}", f"chart-cq-{suffix}"
    return [
        ResourceFlavor(flavor).spec().obj(),
        ClusterQueue(queue)
        .only_namespace(namespace)
        .resource_group(FlavorQuotas(flavor, {"cpu": "4"}))
        .obj(),
        LocalQueue("main", namespace).cluster_queue(queue).obj(),
    ]


def kueue_path(obj: dict[str, Any]) -> str:
    plural = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues"}
    plural["LocalQueue"] = "localqueues"
    namespace = obj["metadata"].get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/kueue.x-k8s.io/v1beta2{scope}/{plural[obj['kind']]}/{obj['metadata']['name']}"


def queued_job(name: str, namespace: str, queue: str = "main") -> Job:
    # No webhook runs for this namespace: created suspended, as the webhook would.
    return Job(name, namespace).queue(queue).suspend().pods(1).request("cpu", "1")


def remove_without_finalizers(admin: Any, path: str) -> None:
    """The hub that would drop the resource-in-use finalizer is gone: drop it, delete."""
    with contextlib.suppress(admin.Error):
        admin.request(
            "PATCH",
            path,
            {"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )
    admin.delete(path)


@pytest.fixture
def helm(tmp_path: Path) -> Helm:
    return Helm(tmp_path)


def _manifest_objects_exist(admin: Any, release: Release) -> None:
    for obj in release.manifest:
        found = admin.get(object_path(obj))
        assert found["metadata"]["name"] == obj["metadata"]["name"], obj["kind"]
        labels = found["metadata"].get("labels") or {}
        assert labels.get("app.kubernetes.io/instance") == release.name, obj["kind"]


def test_the_hub_chart_installs_and_its_identity_runs_the_hub_and_nothing_more(
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
    helm: Helm,
    tmp_path: Path,
) -> None:
    manager = kueue_crds.manager
    admin = kube_rest[manager.name]
    hub_namespace = namespace_factory("chart-hub", clusters=(manager,))
    work = namespace_factory("chart-work", clusters=(manager,))
    other = namespace_factory("chart-other", clusters=(manager,))
    marker = {"matchLabels": {TEST_LABEL: uuid.uuid4().hex}}
    values = {
        "webhook": {"namespaceSelector": marker, "objectSelector": marker},
        "visibility": {"enabled": True},
    }
    with helm.installed("fleetq-hub", manager, hub_namespace, values) as release:
        kinds = {obj["kind"] for obj in release.manifest}
        assert {"Deployment", "ConfigMap", "Role", "ClusterRole", "PodDisruptionBudget"} <= kinds
        assert {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} <= kinds
        _manifest_objects_exist(admin, release)

        identity = mint_identity(
            admin, manager, hub_namespace, release.service_account, tmp_path / "hub.kubeconfig"
        )
        config_map = admin.get(object_path(release.one("ConfigMap")))
        config = tmp_path / "config.yaml"
        config.write_text(config_map["data"]["config.yaml"])
        suffix = uuid.uuid4().hex[:6]
        objects = kueue_objects(work, suffix)
        log = tmp_path / "hub.log"
        try:
            with hub_process(config, identity.kubeconfig, log):
                for obj in objects:
                    admin.request("POST", kueue_path(obj).rsplit("/", 1)[0], obj)
                job_path = f"/apis/batch/v1/namespaces/{work}/jobs"
                admin.request("POST", job_path, queued_job("train", work).obj())

                def admitted() -> dict[str, Any] | None:
                    items = admin.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{work}/workloads")[
                        "items"
                    ]
                    for workload in items:
                        conditions = (workload.get("status") or {}).get("conditions") or []
                        if any(
                            c["type"] == "Admitted" and c["status"] == "True" for c in conditions
                        ):
                            return dict(workload)
                    return None

                workload = eventually(
                    admitted, timeout=ADMISSION_TIMEOUT_SECONDS, what="the Job's Workload admitted"
                )
                owner = workload["metadata"]["ownerReferences"][0]
                assert (owner["kind"], owner["name"]) == ("Job", "train")
                assert workload["status"]["admission"]["clusterQueue"] == f"chart-cq-{suffix}"
                eventually(
                    lambda: admin.get(f"{job_path}/train")["spec"]["suspend"] is False,
                    timeout=ADMISSION_TIMEOUT_SECONDS,
                    what="the Job started",
                )
                lease = admin.get(
                    f"/apis/coordination.k8s.io/v1/namespaces/{hub_namespace}/leases/"
                    "c1f6bfd2.kueue.x-k8s.io"
                )
                assert lease["spec"]["holderIdentity"] == "chart-test"
                events = eventually(
                    lambda: [
                        e
                        for e in admin.get(f"/apis/events.k8s.io/v1/namespaces/{work}/events")[
                            "items"
                        ]
                        if e.get("reason") == "CreatedWorkload"
                    ],
                    timeout=20,
                    what="the hub's CreatedWorkload event",
                )
                assert events[0]["regarding"]["name"] == "train"
            hub_log = log.read_text()
            # No RBAC refusal. (Other tests' namespaces on the shared manager may be
            # terminating: events there are refused for that reason, not for our role.)
            refusals = [
                line
                for line in hub_log.splitlines()
                if ("HTTP 403" in line or "is forbidden" in line)
                and "because it is being terminated" not in line
            ]
            assert refusals == [], "\n".join(refusals)

            as_hub = identity.rest
            account = f"system:serviceaccount:{hub_namespace}:{release.service_account}"
            assert as_hub.username() == account
            refused = {
                "reading another namespace's Secrets": (
                    "GET",
                    f"/api/v1/namespaces/{other}/secrets",
                ),
                "listing every Secret": ("GET", "/api/v1/secrets"),
                "creating a Secret elsewhere": ("POST", f"/api/v1/namespaces/{other}/secrets"),
                "deleting a Job": ("DELETE", f"{job_path}/train"),
                "deleting a node": ("DELETE", "/api/v1/nodes/any"),
                "reading ConfigMaps": ("GET", f"/api/v1/namespaces/{work}/configmaps"),
                "granting itself more": ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
            }
            body = {"metadata": {"name": "fleetq-chart-test"}}
            for what, (method, path) in refused.items():
                assert as_hub.status(method, path, body if method == "POST" else None) == 403, what
            assert as_hub.status("GET", f"/api/v1/namespaces/{hub_namespace}/secrets") == 200
            assert as_hub.status("GET", "/api/v1/nodes") == 200  # topology domains (TAS)
        finally:
            admin.delete(f"/apis/batch/v1/namespaces/{work}/jobs/train")
            for workload in admin.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{work}/workloads")[
                "items"
            ]:
                remove_without_finalizers(
                    admin,
                    f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{work}/workloads/"
                    + workload["metadata"]["name"],
                )
            for obj in reversed(objects):
                remove_without_finalizers(admin, kueue_path(obj))


def test_the_worker_chart_installs_and_its_identity_reports_capacity_but_reads_no_secrets(
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
    helm: Helm,
    tmp_path: Path,
) -> None:
    worker = kueue_crds.workers[0]
    admin = kube_rest[worker.name]
    namespace = namespace_factory("chart-agent", clusters=(worker,))
    with helm.installed("fleetq-worker", worker, namespace, {"replicas": 2}) as release:
        assert {o["kind"] for o in release.manifest} >= {"Deployment", "PodDisruptionBudget"}
        _manifest_objects_exist(admin, release)
        identity = mint_identity(
            admin, worker, namespace, release.service_account, tmp_path / "agent.kubeconfig"
        )
        as_agent = identity.rest
        capacity = f"/apis/fleetq.dev/v1alpha1/workercapacities/chart-{release.name}"
        try:
            account = f"system:serviceaccount:{namespace}:{release.service_account}"
            assert as_agent.username() == account
            status, created = as_agent.call(
                "POST",
                capacity.rsplit("/", 1)[0],
                WorkerCapacity(capacity.rsplit("/", 1)[1]).cluster_name(worker.name).obj(),
            )
            assert status == 201, created
            assert created["spec"]["clusterName"] == worker.name
            for path in (
                "/api/v1/nodes",
                "/api/v1/pods",
                "/apis/kueue.x-k8s.io/v1beta2/workloads",
                "/apis/batch/v1/jobs",
            ):
                assert as_agent.status("GET", path) == 200, path
            for path in (f"/api/v1/namespaces/{namespace}/secrets", "/api/v1/secrets"):
                assert as_agent.status("GET", path) == 403, path
            assert as_agent.status("DELETE", "/api/v1/nodes/any") == 403
            assert as_agent.status("GET", "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters") == 403
        finally:
            admin.delete(capacity)


AGENT_START_TIMEOUT_SECONDS = 90.0


@contextlib.contextmanager
def agent_process(
    kubeconfig: Path, namespace: str, cluster_name: str, log: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`fleetq agent` as the worker chart's pod would run it: its ServiceAccount's token,
    POD_NAMESPACE of the release (where its Role allows the Lease), no --config."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update({"POD_NAMESPACE": namespace, "PYTHONUNBUFFERED": "1"})
    command = [
        sys.executable,
        "-m",
        "cli.main",
        "agent",
        f"--kubeconfig={kubeconfig}",
        f"--cluster-name={cluster_name}",
        f"--health-port={port}",
        "--metrics-port=-1",
        "--identity=chart-agent-test",
    ]
    with log.open("w") as sink:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(
                    f"fleetq agent exited {process.returncode}:\n{log.read_text()}"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        eventually(ready, timeout=AGENT_START_TIMEOUT_SECONDS, what="the agent's /readyz")
        yield process, port
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def dispatched_copies(namespace: str, queue: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Workload and its suspended Job as the MultiKueue manager writes them on a worker."""
    workload_name, origin = "job-remote-chart1", "chart-test-manager"
    job = queued_job("remote", namespace, queue).prebuilt_workload(workload_name)
    job.multikueue_origin(origin)
    template = job.obj()["spec"]["template"]
    workload = (
        Workload(workload_name, namespace)
        .multikueue_origin(origin)
        .queue(queue)
        .pod_set("main", 1, template=template)
    )
    return job.obj(), workload.obj()


def _condition_of(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition["type"] == kind:
            return dict(condition)
    return None


def test_the_agent_does_its_whole_job_with_the_worker_charts_token_and_nothing_more(
    kueue_crds: RunningFleet,
    kube_rest: dict[str, Any],
    namespace_factory: Callable[..., str],
    tmp_path: Path,
) -> None:
    worker = kueue_crds.workers[-1]
    admin = kube_rest[worker.name]
    release_namespace = namespace_factory("chart-agentrun", clusters=(worker,))
    work = namespace_factory("chart-agentwork", clusters=(worker,))
    release = f"worker-{uuid.uuid4().hex[:6]}"
    suffix = uuid.uuid4().hex[:6]
    manifest = helm_install(
        worker,
        "fleetq-worker",
        release,
        release_namespace,
        {"replicas": 0, "clusterName": f"chart-{suffix}"},
        tmp_path / "values.yaml",
    )
    objects = kueue_objects(work, suffix)
    job, workload = dispatched_copies(work, "main")
    job_path = f"/apis/batch/v1/namespaces/{work}/jobs"
    workload_path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{work}/workloads"
    report_name = f"chart-{suffix}"
    report_path = f"/apis/fleetq.dev/v1alpha1/workercapacities/{report_name}"
    log = tmp_path / "agent.log"
    try:
        (deployment,) = [o for o in manifest if o["kind"] == "Deployment"]
        assert deployment["spec"]["replicas"] == 0
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["FLEETQ_CLUSTER_NAME"] == report_name, "the pod would report as this worker"
        identity = mint_chart_identity(
            worker,
            namespace=release_namespace,
            service_account=service_account_of(manifest),
            release=release,
            path=tmp_path / "agent.kubeconfig",
            lifetime_seconds=600,
        )
        kubeconfig = yaml.safe_load(identity.kubeconfig.read_text())
        (user,) = kubeconfig["users"]
        assert set(user["user"]) == {"token"}, "the agent must carry no other credential"
        for obj in objects:
            admin.request("POST", kueue_path(obj).rsplit("/", 1)[0], obj)

        with agent_process(identity.kubeconfig, release_namespace, report_name, log) as (
            process,
            _,
        ):
            report = eventually(
                lambda: _reporting(admin, report_path, "True"),
                timeout=30,
                what="the agent's WorkerCapacity report, Reporting=True",
            )
            assert report["spec"]["clusterName"] == report_name
            lease = admin.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{release_namespace}/leases/"
                "fleetq-agent.fleetq.dev"
            )
            assert lease["spec"]["holderIdentity"] == "chart-agent-test"

            admin.request("POST", workload_path, workload)
            admin.request("POST", job_path, job)
            admitted = eventually(
                lambda: _condition_of(
                    admin.get(f"{workload_path}/{workload['metadata']['name']}"), "Admitted"
                ),
                timeout=ADMISSION_TIMEOUT_SECONDS,
                what="the dispatched Workload admitted on the worker",
            )
            assert admitted["status"] == "True"
            eventually(
                lambda: admin.get(f"{job_path}/remote")["spec"]["suspend"] is False,
                timeout=ADMISSION_TIMEOUT_SECONDS,
                what="the dispatched Job unsuspended",
            )
            process.terminate()
            assert process.wait(timeout=30) == 0, log.read_text()
        stopped = _condition_of(admin.get(report_path), "Reporting")
        assert stopped is not None and stopped["reason"] == "AgentStopped", stopped

        refusals = [
            line
            for line in log.read_text().splitlines()
            if ("HTTP 403" in line or "is forbidden" in line)
            and "because it is being terminated" not in line
        ]
        assert refusals == [], "\n".join(refusals)

        as_agent = token_rest_of(identity.kubeconfig)
        assert as_agent.username() == identity.username
        body = {"metadata": {"name": "fleetq-chart-test"}}
        refused = {
            "reading Secrets of its own namespace": (
                "GET",
                f"/api/v1/namespaces/{release_namespace}/secrets",
            ),
            "listing every Secret": ("GET", "/api/v1/secrets"),
            "reading MultiKueue clusters": (
                "GET",
                "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters",
            ),
            "creating a ClusterQueue": ("POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"),
            "deleting a Job": ("DELETE", f"{job_path}/remote"),
            "deleting a node": ("DELETE", "/api/v1/nodes/any"),
            "taking a Lease elsewhere": (
                "POST",
                f"/apis/coordination.k8s.io/v1/namespaces/{work}/leases",
            ),
        }
        for what, (method, path) in refused.items():
            assert as_agent.status(method, path, body if method == "POST" else None) == 403, what
    finally:
        admin.delete(f"{job_path}/remote")
        for item in admin.get(workload_path)["items"]:
            remove_without_finalizers(admin, f"{workload_path}/{item['metadata']['name']}")
        for obj in reversed(objects):
            remove_without_finalizers(admin, kueue_path(obj))
        admin.delete(report_path)
        helm_uninstall(worker, release, release_namespace)


def token_rest_of(kubeconfig: Path) -> TokenRest:
    """A REST client with exactly the server, CA and token of an identity kubeconfig."""
    document = yaml.safe_load(kubeconfig.read_text())
    cluster = document["clusters"][0]["cluster"]
    ca_pem = base64.b64decode(cluster["certificate-authority-data"])
    return TokenRest(cluster["server"], ca_pem, document["users"][0]["user"]["token"])


def _reporting(admin: Any, path: str, status: str) -> dict[str, Any] | None:
    try:
        report: dict[str, Any] = admin.get(path)
    except admin.Error as error:
        if error.status == 404:
            return None
        raise
    condition = _condition_of(report, "Reporting")
    return report if condition and condition["status"] == status else None
