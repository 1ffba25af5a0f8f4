"""`WebhookRuntime` as the hub runs it: certificate first, then the listener, until cancelled.

Internal mode issues into a real Secret on the manager cluster and writes the cert dir;
mounted mode serves what is in the dir. Either way a client trusting the right CA gets
answers on the port, and after cancellation nothing listens there any more.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from core.kube.client import KubeClient
from core.kube.errors import NotFound
from core.kube.resources import NAMESPACES, SECRETS
from core.manager.configuration import Configuration
from core.manager.webhook_certs import issue
from core.manager.webhooks.cert_files import write_cert_dir
from core.manager.webhooks.runtime import WebhookRuntime
from devfleet.cluster_access import RunningFleet
from integrations.framework.admission_review import AdmissionRequest
from integrations.framework.webhook_context import WebhookContext as JobWebhookContext

pytestmark = pytest.mark.asyncio(loop_scope="session")

CQ_PATH = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue"
REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "runtime-1",
        "operation": "CREATE",
        "object": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"cohortName": "Not A Name"},
        },
    },
}


class NoContext:
    async def job_context(self, request: AdmissionRequest) -> JobWebhookContext:
        return JobWebhookContext()


@pytest_asyncio.fixture(loop_scope="session")
async def manager_client(lite_fleet: RunningFleet) -> AsyncIterator[KubeClient]:
    access = lite_fleet.manager
    client = await KubeClient.from_kubeconfig(access.kubeconfig, name=access.name)
    yield client
    await client.close()


async def _review(port: int, ca: bytes) -> dict[str, Any]:
    trust = ssl.create_default_context(cadata=ca.decode())
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"https://127.0.0.1:{port}{CQ_PATH}", json=REVIEW, ssl=trust) as response,
    ):
        assert response.status == 200
        body: dict[str, Any] = await response.json()
        return body["response"]


async def _start(runtime: WebhookRuntime) -> asyncio.Task[None]:
    task = asyncio.create_task(runtime.run())
    ready = asyncio.create_task(runtime.ready.wait())
    await asyncio.wait({task, ready}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    ready.cancel()
    if task.done():
        task.result()  # raises what stopped it
    assert runtime.ready.is_set()
    return task


async def _stop_and_check_closed(runtime: WebhookRuntime, task: asyncio.Task[None]) -> None:
    port = runtime.server.port
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not runtime.ready.is_set()
    with pytest.raises(OSError):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()


async def test_internal_mode_issues_writes_serves_and_stops(
    manager_client: KubeClient, tmp_path: Path
) -> None:
    namespace = f"wh-runtime-{uuid.uuid4().hex[:8]}"
    await manager_client.create(NAMESPACES, {"metadata": {"name": namespace}})
    try:
        configuration = Configuration(
            namespace=namespace,
            webhook_host="127.0.0.1",
            webhook_port=0,
            webhook_cert_dir=str(tmp_path / "certs"),
            webhook_secret_name="runtime-certs",
        )
        runtime = WebhookRuntime(
            configuration, manager_client, NoContext(), extra_hosts=["127.0.0.1"], targets=()
        )
        task = await _start(runtime)
        secret = await manager_client.get(SECRETS, "runtime-certs", namespace=namespace)
        ca = base64.b64decode(secret["data"]["ca.crt"])
        served = base64.b64decode(secret["data"]["tls.crt"])
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == served
        assert runtime.certificate.cert_pem == served

        response = await _review(runtime.server.port, ca)
        assert response["uid"] == "runtime-1"
        assert response["allowed"] is False
        assert response["status"]["message"].startswith("spec.cohortName: Invalid value")
        await _stop_and_check_closed(runtime, task)
    finally:
        with contextlib.suppress(NotFound):
            await manager_client.delete(NAMESPACES, namespace)


async def test_mounted_mode_serves_the_mounted_pair(
    manager_client: KubeClient, tmp_path: Path
) -> None:
    bundle = issue(["127.0.0.1"], dt.datetime.now(dt.UTC))
    write_cert_dir(tmp_path, bundle)
    configuration = Configuration(
        webhook_host="127.0.0.1",
        webhook_port=0,
        webhook_cert_dir=str(tmp_path),
        internal_cert_management=False,
    )
    runtime = WebhookRuntime(configuration, manager_client, NoContext())
    task = await _start(runtime)
    assert (await _review(runtime.server.port, bundle.ca_cert))["uid"] == "runtime-1"
    await _stop_and_check_closed(runtime, task)
