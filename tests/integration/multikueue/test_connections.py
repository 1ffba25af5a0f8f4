"""MultiKueue connections on real apiservers: the lite fleet's manager and its two workers.

Each test runs a `MultiKueueConnections` in-process against the manager, with a test
namespace standing in for the hub namespace (its Secrets hold the workers' kubeconfigs,
read from the fleet's kubeconfig files with their inline certificates), and fast backoff
and probes so retries show within a second. Cluster-scoped objects get unique names and
are deleted after each test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import re
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import AlreadyExists, NotFound
from core.kube.resources import SECRETS, Resource, ResourceRef
from core.manager.configuration import Configuration, MultiKueueSettings
from devfleet.cluster_access import ClusterAccess, RunningFleet
from hub.multikueue.connections.reconnect_backoff import ReconnectBackoff
from hub.multikueue.connections.remote_caches import RemoteKinds
from hub.multikueue.connections.service import MultiKueueConnections
from hub.multikueue.connections.worker_connection import ConnectionSettings
from hub.multikueue.connections.worker_events import (
    CapacityChanged,
    ConfigChanged,
    RemoteObjectChanged,
    WorkerConnected,
    WorkerDisconnected,
    WorkerEvent,
)
from tests.builders import (
    AdmissionCheck,
    MultiKueueCluster,
    MultiKueueConfig,
    WorkerCapacity,
    Workload,
)
from tests.integration.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CLUSTERS = kind_info("MultiKueueCluster")
CONFIGS = kind_info("MultiKueueConfig")
CHECKS = kind_info("AdmissionCheck")
WORKLOADS = kind_info("Workload")
CAPACITIES = kind_info("WorkerCapacity")
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
FAST = ConnectionSettings(
    backoff=ReconnectBackoff(base_seconds=0.3),
    probe_interval_seconds=1.0,
    probe_timeout_seconds=3.0,
    sync_timeout_seconds=15.0,
    connect_timeout_seconds=3.0,
    qps=120,
    burst=240,
)
FAILED_MESSAGE = re.compile(
    r"; connection attempts: (\d+), next connection attempt: "
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$"
)


def active_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Active":
            return dict(condition)
    return None


def worker_kubeconfig(member: ClusterAccess) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(member.kubeconfig.read_text())
    return document


def with_server(document: dict[str, Any], server: str) -> dict[str, Any]:
    changed = yaml.safe_load(yaml.safe_dump(document))
    for entry in changed["clusters"]:
        entry["cluster"]["server"] = server
    return dict(changed)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Harness:
    """A running MultiKueueConnections plus helpers to create what it reconciles."""

    def __init__(self, fleet: RunningFleet, client: KubeClient, namespace: str) -> None:
        self.fleet = fleet
        self.client = client
        self.namespace = namespace
        self.events: list[WorkerEvent] = []
        self.service: MultiKueueConnections | None = None
        self._task: asyncio.Task[None] | None = None
        self._cleanup: list[tuple[KubeClient, ResourceRef, str]] = []
        self._worker_clients: list[KubeClient] = []
        self.suffix = uuid.uuid4().hex[:6]

    async def start(
        self, settings: ConnectionSettings = FAST, kubeconfig_root: Path | None = None
    ) -> MultiKueueConnections:
        configuration = dataclasses.replace(Configuration(), namespace=self.namespace)
        service = MultiKueueConnections(
            self.client,
            configuration,
            settings=settings,
            kubeconfig_root=kubeconfig_root or Path("/etc/multikueue/kubeconfigs"),
            path_poll_interval_seconds=0.2,
            listener=self.events.append,
        )
        self.service = service
        self._task = asyncio.create_task(service.run())
        await eventually(self._synced, timeout=30, what="connection caches synced")
        return service

    async def _synced(self) -> bool:
        assert self._task is not None and self.service is not None
        if self._task.done():
            self._task.result()
        return self.service.synced

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for client, resource, name in reversed(self._cleanup):
            with contextlib.suppress(NotFound):
                await client.delete(resource, name)
        for client in self._worker_clients:
            await client.close()

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    async def worker_client(self, member: ClusterAccess) -> KubeClient:
        client = await KubeClient.from_kubeconfig(member.kubeconfig, name=member.name)
        self._worker_clients.append(client)
        return client

    async def put_secret(self, name: str, kubeconfig: dict[str, Any] | bytes | None) -> None:
        """The Secret `name` holding `kubeconfig` (a document, or raw bytes as they are)."""
        data = {}
        if kubeconfig is not None:
            raw = (
                kubeconfig if isinstance(kubeconfig, bytes) else yaml.safe_dump(kubeconfig).encode()
            )
            data["kubeconfig"] = base64.b64encode(raw).decode()
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}
        try:
            await self.client.create(SECRETS, body, namespace=self.namespace)
        except AlreadyExists:
            await self.client.replace(SECRETS, name, body, namespace=self.namespace)

    async def cluster(self, name: str, location: str, location_type: str = "Secret") -> None:
        await self._create(
            CLUSTERS, MultiKueueCluster(name).kubeconfig(location, location_type).obj()
        )

    async def config(self, name: str, clusters: list[str]) -> None:
        await self._create(CONFIGS, MultiKueueConfig(name).clusters(*clusters).obj())

    async def check(self, name: str, config: str) -> None:
        await self._create(CHECKS, AdmissionCheck(name).multikueue(config).obj())

    async def _create(self, resource: ResourceRef, body: dict[str, Any]) -> None:
        await self.client.create(resource, body)
        self._cleanup.append((self.client, resource, body["metadata"]["name"]))

    def cleanup_later(self, client: KubeClient, resource: ResourceRef, name: str) -> None:
        self._cleanup.append((client, resource, name))

    async def active(self, resource: ResourceRef, name: str) -> dict[str, Any] | None:
        return active_condition(await self.client.get(resource, name))

    async def wait_active(
        self, resource: ResourceRef, name: str, reason: str, *, timeout: float = 20.0
    ) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            condition = await self.active(resource, name)
            return condition if condition and condition["reason"] == reason else None

        return await eventually(probe, timeout=timeout, what=f"{name} Active reason {reason}")


@pytest.fixture
async def harness(kueue_crds: RunningFleet, namespace: str) -> AsyncIterator[Harness]:
    client = await KubeClient.from_kubeconfig(
        kueue_crds.manager.kubeconfig, name=kueue_crds.manager.name, qps=200, burst=400
    )
    harness = Harness(kueue_crds, client, namespace)
    try:
        yield harness
    finally:
        await harness.stop()
        await client.close()


def workload_body(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return Workload(name, namespace).labels(labels).queue("q").pod_set("main", 1).obj()


async def test_a_worker_from_a_secret_connects_and_caches_only_origin_labelled_objects(
    harness: Harness,
) -> None:
    worker = harness.fleet.workers[0]
    cluster = harness.name("worker-a")
    await harness.put_secret("worker-a", worker_kubeconfig(worker))
    service = await harness.start()
    await harness.cluster(cluster, "worker-a")

    condition = await harness.wait_active(CLUSTERS, cluster, "Active")
    assert (condition["status"], condition["message"]) == ("True", "Connected")
    connection = service.registry.connection(cluster)
    assert connection is not None and connection.connected
    assert connection.disconnected_since is None
    assert connection.client is not None
    budget = connection.client.rate_limiter
    assert (budget.qps, budget.burst) == (120, 240)
    assert WorkerConnected(cluster) in harness.events
    caches = connection.caches
    assert caches is not None and caches.capacities is not None  # fleetq worker: has the API

    remote = await harness.worker_client(worker)
    ns = harness.namespace
    await remote.create(WORKLOADS, workload_body("ours", ns, {ORIGIN_LABEL: "multikueue"}))
    await remote.create(WORKLOADS, workload_body("theirs", ns, {ORIGIN_LABEL: "other-hub"}))
    await remote.create(WORKLOADS, workload_body("local", ns, {}))

    async def cached() -> bool:
        return caches.workloads.store.get(f"{ns}/ours") is not None

    await eventually(cached, what="origin-labelled remote Workload in the cache")
    await asyncio.sleep(0.5)  # the others would have arrived with it
    assert sorted(caches.workloads.store.keys()) == [f"{ns}/ours"]
    changes = [e for e in harness.events if isinstance(e, RemoteObjectChanged)]
    assert [(e.cluster, e.kind, e.key, e.workload_key) for e in changes] == [
        (cluster, "Workload", f"{ns}/ours", f"{ns}/ours")
    ]

    report_name = harness.name("report")
    await remote.create(CAPACITIES, WorkerCapacity(report_name).cluster_name(cluster).obj())
    harness.cleanup_later(remote, CAPACITIES, report_name)

    async def reported() -> list[CapacityChanged]:
        return [
            e
            for e in harness.events
            if isinstance(e, CapacityChanged)
            and e.report is not None
            and e.report.metadata.name == report_name
        ]

    (event,) = await eventually(reported, what="capacity report event")
    assert event.cluster == cluster
    assert any(r.metadata.name == report_name for r in caches.capacity_reports())


async def test_a_worker_without_capacity_reports_still_connects(harness: Harness) -> None:
    missing_api = Resource("fleetq.dev", "v1alpha1", "nosuchreports", namespaced=False)
    settings = dataclasses.replace(FAST, kinds=RemoteKinds(capacities=missing_api))
    cluster = harness.name("upstream-like")
    await harness.put_secret("upstream-like", worker_kubeconfig(harness.fleet.workers[1]))
    service = await harness.start(settings)
    await harness.cluster(cluster, "upstream-like")

    await harness.wait_active(CLUSTERS, cluster, "Active")
    connection = service.registry.connection(cluster)
    assert connection is not None and connection.caches is not None
    assert connection.caches.capacities is None
    assert connection.caches.capacity_reports() == []


async def test_an_insecure_kubeconfig_is_refused_and_not_retried(harness: Harness) -> None:
    document = worker_kubeconfig(harness.fleet.workers[0])
    for entry in document["clusters"]:
        entry["cluster"].pop("certificate-authority-data", None)
        entry["cluster"]["insecure-skip-tls-verify"] = True
    cluster_entry = document["clusters"][0]["name"]
    await harness.put_secret("insecure", document)
    service = await harness.start()
    cluster = harness.name("insecure")
    await harness.cluster(cluster, "insecure")

    condition = await harness.wait_active(CLUSTERS, cluster, "InsecureKubeConfig")
    assert condition["status"] == "False"
    assert condition["message"] == (
        "load client config failed: insecure TLS verification is not allowed for cluster "
        + cluster_entry
    )
    assert service.registry.connection(cluster) is None
    before = (await harness.client.get(CLUSTERS, cluster))["metadata"]["resourceVersion"]
    await asyncio.sleep(1.0)  # several backoff periods: nothing is retried or rewritten
    after = (await harness.client.get(CLUSTERS, cluster))["metadata"]["resourceVersion"]
    assert before == after


async def test_a_secret_holding_unparsable_yaml_is_an_insecure_kubeconfig(
    harness: Harness,
) -> None:
    # Upstream (multikueuecluster.go loadClientConfig): what validateKubeconfig refuses,
    # a parse failure included, is InsecureKubeConfig; BadKubeConfig is for fetching.
    await harness.put_secret("garbage", b"apiVersion: v1\nclusters: [unclosed\n")
    service = await harness.start()
    cluster = harness.name("garbage")
    await harness.cluster(cluster, "garbage")

    condition = await harness.wait_active(CLUSTERS, cluster, "InsecureKubeConfig")
    assert condition["status"] == "False"
    assert condition["message"].startswith(
        "load client config failed: failed to parse kubeconfig(apiconfig): "
    )
    assert service.registry.connection(cluster) is None

    await harness.put_secret("garbage", worker_kubeconfig(harness.fleet.workers[0]))
    await harness.wait_active(CLUSTERS, cluster, "Active")


async def test_a_missing_secret_is_bad_until_it_is_created(harness: Harness) -> None:
    await harness.start()
    cluster = harness.name("late-secret")
    await harness.cluster(cluster, "late-secret")

    condition = await harness.wait_active(CLUSTERS, cluster, "BadKubeConfig")
    assert condition["status"] == "False"
    assert condition["message"].startswith(
        'load client config failed: Secret "late-secret" not found; create it in namespace '
        f'"{harness.namespace}"'
    )

    await harness.put_secret("late-secret", None)
    condition = await eventually(
        lambda: _message_contains(harness, cluster, 'key "kubeconfig" not found'),
        what="missing key reported",
    )
    assert condition["reason"] == "BadKubeConfig"

    await harness.put_secret("late-secret", worker_kubeconfig(harness.fleet.workers[0]))
    condition = await harness.wait_active(CLUSTERS, cluster, "Active")
    assert condition["status"] == "True"


async def _message_contains(harness: Harness, cluster: str, text: str) -> dict[str, Any] | None:
    condition = await harness.active(CLUSTERS, cluster)
    return condition if condition and text in condition["message"] else None


async def test_an_unreachable_worker_is_retried_with_backoff_until_the_secret_is_fixed(
    harness: Harness,
) -> None:
    worker = harness.fleet.workers[0]
    good = worker_kubeconfig(worker)
    unreachable = with_server(good, f"https://127.0.0.1:{closed_port()}")
    await harness.put_secret("flaky", unreachable)
    service = await harness.start()
    cluster = harness.name("flaky")
    await harness.cluster(cluster, "flaky")

    async def attempts_seen() -> tuple[int, datetime, str] | None:
        condition = await harness.active(CLUSTERS, cluster)
        if not condition or condition["reason"] != "ClientConnectionFailed":
            return None
        match = FAILED_MESSAGE.search(condition["message"])
        assert match, condition["message"]
        attempts = int(match.group(1))
        next_at = datetime.fromisoformat(match.group(2).replace("Z", "+00:00"))
        return (attempts, next_at, condition["status"]) if attempts >= 3 else None

    attempts, next_at, status = await eventually(attempts_seen, what="three failed attempts")
    assert status == "False"
    connection = service.registry.connection(cluster)
    assert connection is not None and not connection.connected
    state = connection.state
    # The wait after n failures is 0.3 s * 2^(n-1); the message names that moment.
    assert state.failed_attempts >= attempts
    first_loss = connection.disconnected_since
    assert first_loss is not None and first_loss <= next_at

    await harness.put_secret("flaky", good)  # rotation: reconnects at once, count reset
    await harness.wait_active(CLUSTERS, cluster, "Active", timeout=15)
    assert connection.connected and connection.state.failed_attempts == 0
    assert connection.disconnected_since is None

    await harness.put_secret("flaky", unreachable)  # lost again: told to listeners
    await harness.wait_active(CLUSTERS, cluster, "ClientConnectionFailed")
    lost = [e for e in harness.events if isinstance(e, WorkerDisconnected)]
    assert [e.cluster for e in lost] == [cluster]
    assert connection.disconnected_since == lost[0].since


async def test_admission_checks_follow_their_clusters(harness: Harness) -> None:
    await harness.put_secret("good", worker_kubeconfig(harness.fleet.workers[1]))
    service = await harness.start()
    good, bad, missing = harness.name("good"), harness.name("bad"), harness.name("missing")
    await harness.cluster(good, "good")
    await harness.cluster(bad, "no-such-secret")
    await harness.wait_active(CLUSTERS, good, "Active")
    await harness.wait_active(CLUSTERS, bad, "BadKubeConfig")

    all_good, some, none = harness.name("all"), harness.name("some"), harness.name("none")
    await harness.config(all_good, [good])
    await harness.config(some, [good, missing])
    await harness.config(none, [bad, missing])
    for check in (all_good, some, none):
        await harness.check(check, check)
    orphan = harness.name("orphan")
    await harness.check(orphan, harness.name("no-such-config"))

    condition = await harness.wait_active(CHECKS, all_good, "Active")
    assert (condition["status"], condition["message"]) == (
        "True",
        "The admission check is active",
    )
    condition = await harness.wait_active(CHECKS, some, "SomeActiveClusters")
    assert (condition["status"], condition["message"]) == ("True", f"Missing clusters: [{missing}]")
    condition = await harness.wait_active(CHECKS, none, "NoUsableClusters")
    assert (condition["status"], condition["message"]) == (
        "False",
        f"Missing clusters: [{missing}], Inactive clusters: [{bad}]",
    )
    condition = await harness.wait_active(CHECKS, orphan, "BadConfig")
    assert condition["message"] == (
        "Cannot load the AdmissionChecks parameters: "
        f'MultiKueueConfig.kueue.x-k8s.io "{harness.name("no-such-config")}" not found'
    )

    assert {e.config for e in harness.events if isinstance(e, ConfigChanged)} >= {
        all_good,
        some,
        none,
    }
    views = service.registry.workers_for_check(some)
    assert [(v.name, v.connected) for v in views] == [(good, True), (missing, False)]
    assert [v.name for v in service.registry.connected_workers_for_check(some)] == [good]

    # The missing cluster appears and connects: the check becomes fully Active.
    await harness.cluster(missing, "good")
    await harness.wait_active(CHECKS, some, "Active")


async def test_a_kubeconfig_file_under_the_root_is_used_and_watched(
    harness: Harness, tmp_path: Path
) -> None:
    root = tmp_path / "kubeconfigs"
    root.mkdir()
    outside = tmp_path / "outside.yaml"
    good = worker_kubeconfig(harness.fleet.workers[0])
    outside.write_text(yaml.safe_dump(good))
    (root / "escape.yaml").symlink_to(outside)
    file = root / "worker.yaml"
    file.write_text(yaml.safe_dump(with_server(good, f"https://127.0.0.1:{closed_port()}")))
    await harness.start(kubeconfig_root=root)
    from_file, escaping = harness.name("from-file"), harness.name("escaping")
    await harness.cluster(from_file, str(file), "Path")
    await harness.cluster(escaping, str(root / "escape.yaml"), "Path")

    condition = await harness.wait_active(CLUSTERS, escaping, "BadKubeConfig")
    assert "outside" in condition["message"]
    await harness.wait_active(CLUSTERS, from_file, "ClientConnectionFailed")

    file.write_text(yaml.safe_dump(good))  # the file is rewritten: picked up without events
    await harness.wait_active(CLUSTERS, from_file, "Active")


class TcpRelay:
    """A real TCP path to a worker's apiserver that the test can cut and restore."""

    def __init__(self, target: str) -> None:
        host_port = target.removeprefix("https://")
        host, port = host_port.rsplit(":", 1)
        self.target = (host, int(port))
        self.port = closed_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Refuse new connections and break the open ones, like an apiserver going away."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, upstream_writer))
        await asyncio.gather(
            self._pipe(reader, upstream_writer),
            self._pipe(upstream_reader, writer),
            return_exceptions=True,
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        finally:
            self._writers.discard(writer)
            writer.transport.abort()


async def test_a_lost_worker_is_noticed_and_reconnected_when_it_returns(harness: Harness) -> None:
    worker = harness.fleet.workers[1]
    relay = TcpRelay(worker.server)
    await relay.start()
    await harness.put_secret("relayed", with_server(worker_kubeconfig(worker), relay.server))
    service = await harness.start()
    cluster = harness.name("relayed")
    await harness.cluster(cluster, "relayed")
    await harness.wait_active(CLUSTERS, cluster, "Active")
    connection = service.registry.connection(cluster)
    assert connection is not None and connection.connected

    await relay.cut()
    condition = await harness.wait_active(CLUSTERS, cluster, "ClientConnectionFailed", timeout=10)
    assert condition["status"] == "False"
    (lost,) = [e for e in harness.events if isinstance(e, WorkerDisconnected)]
    assert lost.cluster == cluster and connection.caches is None
    await asyncio.sleep(1.0)  # more failed attempts: the outage still dates from the loss
    assert connection.state.failed_attempts >= 2
    assert connection.disconnected_since == lost.since

    await relay.start()
    await harness.wait_active(CLUSTERS, cluster, "Active", timeout=15)
    assert connection.connected and connection.disconnected_since is None
    assert [e for e in harness.events if isinstance(e, WorkerConnected)] == [
        WorkerConnected(cluster),
        WorkerConnected(cluster),
    ]
    await relay.cut()


async def test_worker_clients_take_the_configured_budget(harness: Harness) -> None:
    settings = MultiKueueSettings(worker_client_qps=400, worker_client_burst=800)
    configuration = dataclasses.replace(Configuration(), multikueue=settings)
    service = MultiKueueConnections(harness.client, configuration)
    assert (service.settings.qps, service.settings.burst) == (400, 800)
