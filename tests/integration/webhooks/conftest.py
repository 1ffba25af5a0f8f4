"""A webhook-serving hub on the manager cluster, shared by this folder's tests.

The hub half runs in-process: informers over LocalQueues, ClusterQueues and
AdmissionChecks back the Job context (as the hub does), the internal certificate manager
keeps its Secret in a namespace of its own, and the server listens on 127.0.0.1, where the
local apiserver reaches it through URL-based webhook configurations.

Other tests share the manager cluster, and with failurePolicy Fail a webhook that stops
answering blocks every request it matches. So the configurations are uniquely named, the
Job webhooks match only namespaces carrying this session's label value, the kueue-object
webhooks only objects carrying it, and both configurations are deleted on the way out,
whatever happened in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio

from core.api.admission_check import AdmissionCheck
from core.api.cluster_queue import ClusterQueue
from core.api.local_queue import LocalQueue
from core.api.registry import kind_info
from core.kube.client import KubeClient
from core.kube.errors import ApiError, NotFound
from core.kube.informer import Informer
from core.kube.resources import JOBS, NAMESPACES
from core.manager.webhook_certs import CertBundle, needs_renewal
from core.manager.webhooks.cert_manager import InternalCertManager, default_targets
from core.manager.webhooks.configurations import UrlEndpoint, WebhookSettings
from core.manager.webhooks.job_context import CachedJobContext
from core.manager.webhooks.registration import apply_configurations, delete_configurations
from core.manager.webhooks.server import WebhookServer, create_app
from core.manager.webhooks.tls import ServingCertificate
from devfleet.cluster_access import RunningFleet

TEST_LABEL = "fleetq.dev/webhook-test"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
ACTIVATION_TIMEOUT_SECONDS = 30.0
CA_PROPAGATION_SECONDS = 2.0


class ForcedRenewal:
    """`needs_renewal`, except that the next `force()`d checks answer "renew"."""

    def __init__(self) -> None:
        self.pending = 0

    def force(self) -> None:
        self.pending += 1

    def __call__(self, bundle: CertBundle, hosts: list[str], now: dt.datetime) -> str | None:
        if self.pending:
            self.pending -= 1
            return "rotation forced by the test"
        return needs_renewal(bundle, hosts, now)


@dataclass
class WebhookHub:
    client: KubeClient
    label_value: str
    hub_namespace: str
    probe_namespace: str
    settings: WebhookSettings
    certificate: ServingCertificate
    cert_manager: InternalCertManager
    renewal: ForcedRenewal
    server: WebhookServer
    local_queues: Informer[LocalQueue]
    namespaces: list[str] = field(default_factory=list)

    @property
    def labels(self) -> dict[str, str]:
        """The label that puts a namespace or kueue object in reach of these webhooks."""
        return {TEST_LABEL: self.label_value}

    async def create_namespace(self, prefix: str, *, in_scope: bool = True) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        labels = self.labels if in_scope else {}
        await self.client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})
        self.namespaces.append(name)
        return name

    @staticmethod
    def job(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
                    }
                },
            },
        }


async def _wait_active(hub: WebhookHub) -> None:
    """Until the apiserver has loaded both configurations and calls the server."""
    probe = hub.job("probe", hub.probe_namespace, {QUEUE_LABEL: "probe"})
    deadline = asyncio.get_running_loop().time() + ACTIVATION_TIMEOUT_SECONDS
    while True:
        try:
            mutated = await hub.client.create(JOBS, probe, dry_run=True)
            if mutated["spec"].get("suspend") is True:
                bad = {**probe, "metadata": {**probe["metadata"], "labels": {QUEUE_LABEL: "A"}}}
                try:
                    await hub.client.create(JOBS, bad, dry_run=True)
                except ApiError:
                    return
        except ApiError:
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the apiserver never started calling the test webhooks")
        await asyncio.sleep(0.2)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def webhook_hub(kueue_crds: RunningFleet) -> AsyncIterator[WebhookHub]:
    manager = kueue_crds.manager
    client = await KubeClient.from_kubeconfig(manager.kubeconfig, name=manager.name)
    value = uuid.uuid4().hex[:10]
    hub_namespace = f"wh-hub-{value}"
    await client.create(NAMESPACES, {"metadata": {"name": hub_namespace}})
    namespaces = [hub_namespace]

    informers = {
        "LocalQueue": Informer(client, kind_info("LocalQueue"), into=LocalQueue),
        "ClusterQueue": Informer(client, kind_info("ClusterQueue"), into=ClusterQueue),
        "AdmissionCheck": Informer(client, kind_info("AdmissionCheck"), into=AdmissionCheck),
    }
    tasks: list[asyncio.Task[None]] = [
        asyncio.create_task(informer.run()) for informer in informers.values()
    ]
    settings = WebhookSettings(
        endpoint=UrlEndpoint("https://127.0.0.1:0"),  # the real port is known after start
        hub_namespace=hub_namespace,
        mutating_name=f"fleetq-test-mutating-{value}",
        validating_name=f"fleetq-test-validating-{value}",
        job_namespace_selector={"matchLabels": {TEST_LABEL: value}},
        kueue_object_selector={"matchLabels": {TEST_LABEL: value}},
        timeout_seconds=5,
    )
    certificate = ServingCertificate()
    renewal = ForcedRenewal()
    cert_manager = InternalCertManager(
        client,
        certificate,
        namespace=hub_namespace,
        secret_name="webhook-certs",
        hosts=["fleetq-webhook", "127.0.0.1"],
        targets=default_targets(settings.mutating_name, settings.validating_name),
        renewal_policy=renewal,
        ca_propagation_seconds=CA_PROPAGATION_SECONDS,
    )
    provider = CachedJobContext(
        local_queues=informers["LocalQueue"].store,
        cluster_queues=informers["ClusterQueue"].store,
        admission_checks=informers["AdmissionCheck"].store,
    )
    server = WebhookServer(create_app(provider), certificate, host="127.0.0.1", port=0)
    try:
        for informer in informers.values():
            await informer.wait_synced(30)
        await cert_manager.reconcile()
        await server.start()
        settings = dataclasses.replace(
            settings,
            endpoint=UrlEndpoint.local(server.port),
            ca_bundle=cert_manager.published_ca_bundle,
        )
        await apply_configurations(client, settings)
        hub = WebhookHub(
            client=client,
            label_value=value,
            hub_namespace=hub_namespace,
            probe_namespace="",
            settings=settings,
            certificate=certificate,
            cert_manager=cert_manager,
            renewal=renewal,
            server=server,
            local_queues=informers["LocalQueue"],
            namespaces=namespaces,
        )
        hub.probe_namespace = await hub.create_namespace("wh-probe")
        await _wait_active(hub)
        yield hub
    finally:
        await delete_configurations(client, settings)
        await server.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for namespace in namespaces:
            with contextlib.suppress(NotFound):
                await client.delete(NAMESPACES, namespace)
        await client.close()
