"""The visibility API as an aggregated API server, behind a real kube-apiserver.

An APIService left behind would disturb every other test's discovery, so this module
starts a lite cluster of its own (etcd + apiserver, via kwokctl) with a front proxy as
every fleet cluster has one (devfleet.front_proxy: a front-proxy CA and client
certificate, `--requestheader-*` flags, and `--enable-aggregator-routing` so the
apiserver dials the APIService's endpoint directly). The hub serves the visibility API over
TLS on this machine's non-loopback IPv4 (Endpoints refuse loopback addresses); a Service
without selector, a hand-made EndpointSlice and the APIService
`v1beta2.visibility.kueue.x-k8s.io` (its caBundle the hub's serving CA) route to it.

Then, as users do: `kubectl get --raw .../clusterqueues/<cq>/pendingworkloads` through the
apiserver answers the hub's queue; an impersonated user without RBAC gets the hub's 403
until a Role grants `get` on the subresource; straight to the hub, no credentials is 401,
`X-Remote-User` without the proxy's certificate is ignored, a ServiceAccount token is
checked with TokenReview and SubjectAccessReview.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.kube.client import KubeClient
from core.kube.errors import KubeError
from core.kube.resources import NAMESPACES, Resource
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from core.manager.serving_tls import ServingCertificate
from core.manager.webhook_certs import service_dns_names
from devfleet.aggregated_api import api_service_route, machine_ipv4
from devfleet.front_proxy import FrontProxyPki, kwokctl_args, write_front_proxy_pki
from devfleet.kwokctl import PORT_OPTIONS, Kwokctl
from devfleet.ports import allocate_ports
from devfleet.toolchain import binary_path, missing_binaries
from hub.app import Hub, HubOptions
from tests.builders import ClusterQueue, FlavorQuotas, LocalQueue, ResourceFlavor, Workload
from tests.integration.rbac_resources import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, SERVICE_ACCOUNTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

REPO = Path(__file__).resolve().parents[3]
GROUP = "visibility.kueue.x-k8s.io"
SERVICE, SERVICE_NAMESPACE = "fleetq-visibility", "fleetq-system"
SERVICES = Resource("", "v1", "services", kind="Service")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices", kind="EndpointSlice")
API_SERVICES = Resource(
    "apiregistration.k8s.io", "v1", "apiservices", namespaced=False, kind="APIService"
)


@dataclass(frozen=True)
class AggregatingCluster:
    kubeconfig: Path
    pki: FrontProxyPki

    async def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """kubectl in a thread: the hub answering it runs on this test's event loop."""
        return await asyncio.to_thread(self.kubectl_blocking, *args, check=check)

    def kubectl_blocking(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(binary_path("kubectl")), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done


def _wait_ready(cluster: AggregatingCluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.kubectl_blocking("get", "--raw", "/readyz", check=False).returncode == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"apiserver not ready within {timeout}s")


@pytest.fixture(scope="module")
def aggregating_cluster() -> Iterator[AggregatingCluster]:
    """A lite cluster whose apiserver fronts aggregated APIs with a real front proxy."""
    missing = missing_binaries(["kubernetes", "etcd", "kwok"])
    assert not missing, f"fleet tools not built ({', '.join(missing)}); run `make tools`"
    workdir = Path(tempfile.mkdtemp(prefix="fq-vis-"))
    kwokctl = Kwokctl(workdir / "kwok")
    kwokctl.workdir.mkdir(parents=True)
    name = f"fq-vis-{uuid.uuid4().hex[:6]}"
    pki = write_front_proxy_pki(workdir / "pki")
    ports = allocate_ports(len(PORT_OPTIONS))
    extra = kwokctl_args(pki)
    config = kwokctl.write_config(name, ports, [])
    args = kwokctl.create_args(name, lite=True, config=config) + kwokctl.loopback_args(ports)
    try:
        kwokctl.run(*args, *extra, timeout=300)
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(kwokctl.kubeconfig(name))
        kubeconfig.chmod(0o600)
        cluster = AggregatingCluster(kubeconfig, pki)
        _wait_ready(cluster, 120)
        cluster.kubectl_blocking(
            "apply", "--server-side", "-f", str(REPO / "charts/fleetq-hub/crds")
        )
        cluster.kubectl_blocking(
            "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"
        )
        yield cluster
    finally:
        try:
            if not os.environ.get("FQ_KEEP"):
                kwokctl.delete(name)
        finally:
            if not os.environ.get("FQ_KEEP"):
                shutil.rmtree(workdir, ignore_errors=True)


@dataclass
class Served:
    hub: Hub
    client: KubeClient
    ip: str
    port: int
    certificate: ServingCertificate
    cluster_queue: str
    namespace: str


async def _eventually(probe: Any, *, timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last={last!r}")


def _workload(name: str, queue: str) -> dict[str, Any]:
    return Workload(name).queue(queue).pod_set("main", 1, requests={"cpu": "1"}).obj()


async def _queue_with_pending(client: KubeClient, namespace: str) -> str:
    """ClusterQueue `cq` (1 CPU) with `first` admitted and `second`, `third` pending."""
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    await client.create(kinds.RESOURCE_FLAVORS, ResourceFlavor("f").obj())
    queue = ClusterQueue("cq").namespace_selector().resource_group(FlavorQuotas("f", {"cpu": "1"}))
    await client.create(kinds.CLUSTER_QUEUES, queue.obj())
    await client.create(kinds.LOCAL_QUEUES, LocalQueue("lq", namespace).cluster_queue("cq").obj())
    for name in ("first", "second", "third"):
        if name == "third":
            await asyncio.sleep(1.1)  # creationTimestamp has second precision: order them
        await client.create(kinds.WORKLOADS, _workload(name, "lq"), namespace=namespace)
        if name == "first":

            async def admitted() -> bool:
                got = await client.get(kinds.WORKLOADS, "first", namespace=namespace)
                conditions = (got.get("status") or {}).get("conditions") or ()
                return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)

            await _eventually(admitted, what="first admitted")
    return "cq"


async def _route_to_hub(client: KubeClient, ip: str, port: int, ca_pem: bytes) -> None:
    """Service → EndpointSlice (this machine) → APIService, trusting the hub's CA."""
    await client.create(NAMESPACES, {"metadata": {"name": SERVICE_NAMESPACE}})
    service, slice_, *api_services = api_service_route(
        service=SERVICE, namespace=SERVICE_NAMESPACE, ip=ip, port=port, ca_pem=ca_pem
    )
    await client.create(SERVICES, service)
    await client.create(ENDPOINT_SLICES, slice_)
    for api_service in api_services:
        await client.create(API_SERVICES, api_service)


@pytest.fixture(scope="module")
async def served(aggregating_cluster: AggregatingCluster) -> AsyncIterator[Served]:
    client = await KubeClient.from_kubeconfig(aggregating_cluster.kubeconfig, name="vis")
    ip = machine_ipv4()
    certificate = ServingCertificate.self_signed(
        [*service_dns_names(SERVICE, SERVICE_NAMESPACE), ip]
    )
    hub = Hub(
        dataclasses.replace(Configuration(), leader_election=LeaderElection(leader_elect=False)),
        client,
        HubOptions(
            health_port=-1,
            metrics_port=-1,
            visibility_port=0,
            visibility_certificate=certificate,
            bind_host=ip,
            queue_status_interval_seconds=0.2,
            webhooks=False,
            multikueue=False,
        ),
    )
    task = asyncio.create_task(hub.run(), name="visibility-hub")
    try:

        async def ready() -> bool:
            if task.done():
                task.result()
            return hub.ready and "visibility" in hub.ports

        await _eventually(ready, what="hub ready")
        port = hub.ports["visibility"]
        namespace = "team-a"
        cq = await _queue_with_pending(client, namespace)
        await _route_to_hub(client, ip, port, certificate.ca_pem)
        yield Served(hub, client, ip, port, certificate, cq, namespace)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()


def _pending_path(cq: str) -> str:
    return f"/apis/{GROUP}/v1beta2/clusterqueues/{cq}/pendingworkloads"


async def _api_service_available(served: Served) -> dict[str, Any] | None:
    got = await served.client.get(API_SERVICES, f"v1beta2.{GROUP}")
    for condition in (got.get("status") or {}).get("conditions") or ():
        if condition["type"] == "Available" and condition["status"] == "True":
            return got
    return None


async def test_kubectl_get_raw_through_the_apiserver_lists_pending_workloads(
    served: Served, aggregating_cluster: AggregatingCluster
) -> None:
    await _eventually(lambda: _api_service_available(served), timeout=60, what="APIService")

    async def listed() -> dict[str, Any] | None:
        # The proxy learns that the APIService is available a moment after its status says so.
        path = _pending_path(served.cluster_queue)
        done = await aggregating_cluster.kubectl("get", "--raw", path, check=False)
        return json.loads(done.stdout) if done.returncode == 0 else None

    summary = await _eventually(listed, what="pending workloads through the apiserver")
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert summary["apiVersion"] == f"{GROUP}/v1beta2"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in summary["items"]] == [
        ("second", 0),
        ("third", 1),
    ]
    assert {i["localQueueName"] for i in summary["items"]} == {"lq"}

    lq_path = (
        f"/apis/{GROUP}/v1beta2/namespaces/{served.namespace}/localqueues/lq/pendingworkloads"
        "?limit=1&offset=1"
    )
    local = json.loads((await aggregating_cluster.kubectl("get", "--raw", lq_path)).stdout)
    assert [i["metadata"]["name"] for i in local["items"]] == ["third"]

    missing = await aggregating_cluster.kubectl(
        "get", "--raw", _pending_path("no-such-queue"), check=False
    )
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr or "not found" in missing.stderr


async def test_rbac_decides_for_users_the_apiserver_forwards(
    served: Served, aggregating_cluster: AggregatingCluster
) -> None:
    await _eventually(lambda: _api_service_available(served), timeout=60, what="APIService")
    as_dana = ("--as", "dana", "--as-group", "viewers")
    path = _pending_path(served.cluster_queue)
    refused = await aggregating_cluster.kubectl("get", "--raw", path, *as_dana, check=False)
    assert refused.returncode != 0
    assert (
        f'clusterqueues.{GROUP} "{served.cluster_queue}" is forbidden: User "dana" cannot get '
        f'resource "clusterqueues/pendingworkloads"'
    ) in refused.stderr

    await _grant_pending_workloads(served.client, "viewers-pending", group="viewers")

    async def allowed() -> dict[str, Any] | None:
        done = await aggregating_cluster.kubectl("get", "--raw", path, *as_dana, check=False)
        return json.loads(done.stdout) if done.returncode == 0 else None

    # The hub caches "no" for a few seconds, as the apiserver's delegating authorizer does.
    summary = await _eventually(allowed, timeout=30, what="dana allowed after the binding")
    assert [i["metadata"]["name"] for i in summary["items"]] == ["second", "third"]


async def _grant_pending_workloads(
    client: KubeClient, name: str, *, group: str = "", user: str = "", sa: str = ""
) -> None:
    await client.create(
        CLUSTER_ROLES,
        {
            "metadata": {"name": name},
            "rules": [
                {
                    "apiGroups": [GROUP],
                    "resources": ["clusterqueues/pendingworkloads"],
                    "verbs": ["get"],
                }
            ],
        },
    )
    if group:
        subject = {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}
    elif user:
        subject = {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}
    else:
        namespace, _, account = sa.partition("/")
        subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    await client.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [subject],
        },
    )


def _client_context(served: Served, cert: Path | None = None, key: Path | None = None) -> Any:
    context = ssl.create_default_context(cadata=served.certificate.ca_pem.decode())
    if cert is not None and key is not None:
        context.load_cert_chain(cert, key)
    return context


async def _direct(
    served: Served, path: str, *, context: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    url = f"https://{served.ip}:{served.port}{path}"
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, ssl=context, headers=headers or {}) as reply,
    ):
        text = await reply.text()
        is_json = reply.content_type == "application/json"
        return reply.status, json.loads(text) if is_json else {"text": text}


async def test_straight_to_the_hub_credentials_are_checked_with_the_cluster(
    served: Served, aggregating_cluster: AggregatingCluster
) -> None:
    path = _pending_path(served.cluster_queue)
    plain = _client_context(served)

    status, body = await _direct(served, path, context=plain)
    assert (status, body["reason"], body["code"]) == (401, "Unauthorized", 401)

    # The headers only count on the front proxy's connection.
    status, _ = await _direct(served, path, context=plain, headers={"X-Remote-User": "admin"})
    assert status == 401

    status, body = await _direct(served, "/healthz", context=plain)
    assert (status, body) == (200, {"text": "ok"})

    proxy = _client_context(served, aggregating_cluster.pki.cert, aggregating_cluster.pki.key)
    status, body = await _direct(
        served, path, context=proxy, headers={"X-Remote-User": "erin", "X-Remote-Group": "none"}
    )
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["details"] == {
        "name": served.cluster_queue,
        "group": GROUP,
        "kind": "clusterqueues",
    }
    assert 'User "erin"' in body["message"]

    await served.client.create(
        SERVICE_ACCOUNTS, {"metadata": {"name": "reader", "namespace": served.namespace}}
    )
    token = await _service_account_token(served.client, served.namespace, "reader")
    bearer = {"Authorization": f"Bearer {token}"}
    status, body = await _direct(served, path, context=plain, headers=bearer)
    assert status == 403, body
    assert f'User "system:serviceaccount:{served.namespace}:reader"' in body["message"]

    await _grant_pending_workloads(served.client, "reader-pending", sa=f"{served.namespace}/reader")

    async def allowed() -> dict[str, Any] | None:
        status, body = await _direct(served, path, context=plain, headers=bearer)
        return body if status == 200 else None

    summary = await _eventually(allowed, timeout=30, what="the token allowed after the binding")
    assert [i["metadata"]["name"] for i in summary["items"]] == ["second", "third"]

    status, _ = await _direct(
        served, path, context=plain, headers={"Authorization": "Bearer not-a-token"}
    )
    assert status == 401


async def _service_account_token(client: KubeClient, namespace: str, name: str) -> str:
    try:
        payload = await client.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
    except KubeError as error:
        raise AssertionError(f"could not get a token for {namespace}/{name}: {error}") from error
    return str(json.loads(payload)["status"]["token"])


async def test_metrics_can_require_the_same_delegated_auth_while_probes_stay_open(
    served: Served, aggregating_cluster: AggregatingCluster
) -> None:
    ip, (metrics_port,) = served.ip, allocate_ports(1)
    options = HubOptions(
        health_port=0,
        metrics_port=metrics_port,
        bind_host=ip,
        metrics_auth=True,
        metrics_certificate=ServingCertificate.self_signed([ip]),
        webhooks=False,
        multikueue=False,
    )
    configuration = dataclasses.replace(
        Configuration(), leader_election=LeaderElection(leader_elect=False)
    )
    # Only the servers: this hub must not lead next to the module's hub.
    hub = Hub(configuration, served.client, options)
    runners: list[Any] = []
    try:
        await hub._start_servers(runners)
        assert hub.ports["metrics"] == metrics_port != hub.ports["health"]
        assert options.metrics_certificate is not None
        tls = ssl.create_default_context(cadata=options.metrics_certificate.ca_pem.decode())
        metrics_url = f"https://{ip}:{metrics_port}/metrics"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://{ip}:{hub.ports['health']}/healthz") as reply:
                assert reply.status == 200
            async with session.get(metrics_url, ssl=tls) as reply:
                assert reply.status == 401

            await served.client.create(
                SERVICE_ACCOUNTS, {"metadata": {"name": "scraper", "namespace": served.namespace}}
            )
            token = await _service_account_token(served.client, served.namespace, "scraper")
            bearer = {"Authorization": f"Bearer {token}"}
            async with session.get(metrics_url, ssl=tls, headers=bearer) as reply:
                assert reply.status == 403
                assert 'cannot get path "/metrics"' in (await reply.json())["message"]

            await served.client.create(
                CLUSTER_ROLES,
                {
                    "metadata": {"name": "metrics-reader"},
                    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
                },
            )
            await served.client.create(
                CLUSTER_ROLE_BINDINGS,
                {
                    "metadata": {"name": "metrics-reader"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "metrics-reader",
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "scraper", "namespace": served.namespace}
                    ],
                },
            )

            async def scraped() -> str | None:
                async with session.get(metrics_url, ssl=tls, headers=bearer) as reply:
                    return await reply.text() if reply.status == 200 else None

            text = await _eventually(scraped, what="metrics allowed after the binding")
            assert "kueue_build_info" in text
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_metrics_over_tls_refuse_to_share_the_probes_port(served: Served) -> None:
    options = HubOptions(
        health_port=0,
        metrics_port=0,
        metrics_certificate=ServingCertificate.self_signed(["127.0.0.1"]),
        webhooks=False,
        multikueue=False,
    )
    hub = Hub(Configuration(), served.client, options)
    runners: list[Any] = []
    with pytest.raises(ValueError, match="port of its own"):
        await hub._start_servers(runners)
    assert runners == []
