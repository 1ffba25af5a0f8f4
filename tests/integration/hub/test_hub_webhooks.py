"""The hub serving its admission webhooks, registered out of cluster by URL, on a real
apiserver: a plain (unsuspended) Job is suspended at create time and then run by the same
hub; a bad queue name is refused with the webhook's message; every replica serves, not
only the leader; a clean stop takes the registration away again.

The manager cluster is shared and the webhooks fail closed, so each test's configurations
are uniquely named and only match its own namespace and labelled kueue objects, and are
deleted afterwards whatever happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.kube.errors import ApiError, NotFound
from core.kube.resources import JOBS, NAMESPACES
from core.manager import watched_kinds as kinds
from core.manager.configuration import Configuration, LeaderElection
from core.manager.webhook_service import UrlRegistration
from core.manager.webhooks.configurations import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from hub.app import Hub, HubOptions, WebhooksFailed

pytestmark = pytest.mark.asyncio(loop_scope="session")

TEST_LABEL = "fleetq.dev/hub-webhook-test"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POOL_LABEL = "fleetq.dev/node-pool"


@dataclass
class WebhookSetup:
    """Names and scope shared by the hubs of one test."""

    cluster: Any
    tmp_path: Path
    registration: UrlRegistration
    hub_namespace: str

    @property
    def labels(self) -> dict[str, str]:
        return {TEST_LABEL: self.cluster.suffix}

    def configuration(self, leader_election: LeaderElection) -> Configuration:
        return dataclasses.replace(
            Configuration(),
            namespace=self.hub_namespace,
            leader_election=leader_election,
            webhook_cert_dir=str(self.tmp_path / "certs"),
            webhook_secret_name="hub-webhook-certs",
        )

    def options(self, identity: str = "") -> HubOptions:
        return HubOptions(
            health_port=-1,
            metrics_port=-1,
            identity=identity,
            lease_namespace=self.cluster.namespace,
            lease_name=self.cluster.name("hub"),
            queue_status_interval_seconds=0.2,
            webhook_port=0,
            webhook_registration=self.registration,
        )

    def job(self, name: str, queue: str, *, cpu: str = "1") -> dict[str, Any]:
        """A Job as a user writes it: not suspended."""
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "registry.invalid/train:latest",
                                "resources": {"requests": {"cpu": cpu}},
                            }
                        ],
                    }
                },
            },
        }


@pytest.fixture
async def setup(cluster: Any, tmp_path: Path) -> AsyncIterator[WebhookSetup]:
    suffix = cluster.suffix
    registration = UrlRegistration(
        host="127.0.0.1",
        mutating_name=f"fleetq-hubtest-mutating-{suffix}",
        validating_name=f"fleetq-hubtest-validating-{suffix}",
        job_namespace_selector={"matchLabels": {TEST_LABEL: suffix}},
        kueue_object_selector={"matchLabels": {TEST_LABEL: suffix}},
        timeout_seconds=5,
        recheck_seconds=0.5,
    )
    hub_namespace = f"hubwh-{suffix}"  # the hub creates it for its certificate Secret
    await cluster.patch(
        NAMESPACES, cluster.namespace, {"metadata": {"labels": {TEST_LABEL: suffix}}}
    )
    try:
        yield WebhookSetup(cluster, tmp_path, registration, hub_namespace)
    finally:
        for resource, name in (
            (MUTATING_WEBHOOK_CONFIGURATIONS, registration.mutating_name),
            (VALIDATING_WEBHOOK_CONFIGURATIONS, registration.validating_name),
            (NAMESPACES, hub_namespace),
        ):
            with contextlib.suppress(NotFound):
                await cluster.client.delete(resource, name)


async def _suspends(cluster: Any, setup: WebhookSetup) -> bool:
    """Whether the apiserver calls the mutating webhook for this namespace yet."""
    try:
        job = setup.job("probe", "probe")
        job["metadata"]["namespace"] = cluster.namespace
        created = await cluster.client.create(JOBS, job, dry_run=True)
    except ApiError:
        return False
    return created["spec"].get("suspend") is True


async def _configurations(cluster: Any, setup: WebhookSetup) -> list[dict[str, Any]] | None:
    found = []
    for resource, name in (
        (MUTATING_WEBHOOK_CONFIGURATIONS, setup.registration.mutating_name),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, setup.registration.validating_name),
    ):
        try:
            found.append(await cluster.client.get(resource, name))
        except NotFound:
            return None
    return found


async def _gone(cluster: Any, setup: WebhookSetup) -> bool:
    for resource, name in (
        (MUTATING_WEBHOOK_CONFIGURATIONS, setup.registration.mutating_name),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, setup.registration.validating_name),
    ):
        with contextlib.suppress(NotFound):
            await cluster.client.get(resource, name)
            return False
    return True


def _urls(configurations: list[dict[str, Any]]) -> set[str]:
    return {
        webhook["clientConfig"]["url"].rsplit("/", 1)[0]
        for configuration in configurations
        for webhook in configuration["webhooks"]
    }


async def _running(cluster: Any, job: str) -> dict[str, Any] | None:
    found = await cluster.get(JOBS, job)
    return found if found is not None and found["spec"].get("suspend") is False else None


async def test_a_plain_job_is_suspended_at_create_then_admitted_and_started_by_the_hub(
    hubs: Any, cluster: Any, setup: WebhookSetup
) -> None:
    options = dataclasses.replace(setup.options(), health_port=0)
    hub: Hub = await hubs.start(setup.configuration(LeaderElection(leader_elect=False)), options)
    assert hub.webhooks is not None and hub.not_ready_reason() is None
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{hub.ports['health']}/readyz") as reply,
    ):
        assert (reply.status, await reply.text()) == (200, "ok")
    registered = await cluster.eventually(
        lambda: _configurations(cluster, setup), what="configurations registered"
    )
    assert _urls(registered) == {f"https://127.0.0.1:{hub.webhooks.port}"}
    assert all(w["clientConfig"]["caBundle"] for c in registered for w in c["webhooks"])
    await cluster.eventually(lambda: _suspends(cluster, setup), what="the apiserver calls it")

    pool = cluster.name("pool")
    flavor = await cluster.flavor("rf", {POOL_LABEL: pool})
    cq = await cluster.cluster_queue("team", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    created = await cluster.create(JOBS, setup.job("plain", lq))
    assert created["spec"]["suspend"] is True, "the mutating webhook suspends a queued Job"
    started = await cluster.eventually(lambda: _running(cluster, "plain"), what="plain started")
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {POOL_LABEL: pool}
    workload = await cluster.job_workload("plain") or {}
    assert workload["status"]["admission"]["clusterQueue"] == cq

    with pytest.raises(ApiError) as raised:
        await cluster.create(JOBS, setup.job("bad", "Bad_Queue"))
    assert raised.value.status == 403
    assert 'admission webhook "vjob.fleetq.dev" denied the request' in raised.value.message
    assert 'Invalid value: "Bad_Queue"' in raised.value.message
    assert await cluster.get(JOBS, "bad") is None

    # Kueue objects go through the hub's validation too (here: a labelled ClusterQueue).
    bad_selector = {"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}
    with pytest.raises(ApiError) as raised:
        await cluster.create(
            kinds.CLUSTER_QUEUES,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": cluster.name("invalid"), "labels": setup.labels},
                "spec": {"namespaceSelector": bad_selector},
            },
        )
    assert 'admission webhook "vclusterqueue.fleetq.dev" denied the request' in (
        raised.value.message
    )

    # The webhook reads the hub's caches: a `default` LocalQueue is filled in for a Job
    # without a queue, and a queue leading to a MultiKueue check hands the Job to it.
    check = cluster.name("mk")
    await cluster.create(
        kinds.ADMISSION_CHECKS,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue"},
        },
    )
    remote_cq = await cluster.cluster_queue(
        "remote", flavor, "2", admissionChecksStrategy={"admissionChecks": [{"name": check}]}
    )
    await cluster.local_queue("remote", remote_cq)
    await cluster.local_queue("default", cq)

    async def defaulted_and_dispatched() -> tuple[dict[str, Any], dict[str, Any]] | None:
        unqueued = setup.job("unqueued", "x")
        del unqueued["metadata"]["labels"][QUEUE_LABEL]
        defaulted = await cluster.client.create(
            JOBS,
            {**unqueued, "metadata": {**unqueued["metadata"], "namespace": cluster.namespace}},
            dry_run=True,
        )
        remote = setup.job("remote", "remote")
        remote["metadata"]["namespace"] = cluster.namespace
        dispatched = await cluster.client.create(JOBS, remote, dry_run=True)
        labels = defaulted["metadata"].get("labels") or {}
        if labels.get(QUEUE_LABEL) != "default" or not dispatched["spec"].get("managedBy"):
            return None
        return defaulted, dispatched

    defaulted, dispatched = await cluster.eventually(
        defaulted_and_dispatched, what="defaulted queue and MultiKueue hand-over"
    )
    assert defaulted["spec"]["suspend"] is True
    assert dispatched["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert dispatched["spec"]["suspend"] is True

    port = hub.webhooks.port
    await hubs.stop(hub)
    assert await _gone(cluster, setup), "a clean stop removes what the hub registered"
    with pytest.raises(OSError):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()


async def test_every_replica_serves_and_the_survivor_registers_itself_again(
    hubs: Any, cluster: Any, setup: WebhookSetup
) -> None:
    election = LeaderElection(
        leader_elect=True,
        lease_duration_seconds=3.0,
        renew_deadline_seconds=2.0,
        retry_period_seconds=0.5,
    )
    first: Hub = await hubs.start(setup.configuration(election), setup.options("hub-a"))
    await cluster.eventually(lambda: _leads(first), what="the first hub leads")
    second: Hub = await hubs.start(setup.configuration(election), setup.options("hub-b"))
    assert not second.leading and second.not_ready_reason() is None
    assert first.webhooks is not None and second.webhooks is not None

    # The follower registered last: the apiserver now calls the follower.
    configurations = await cluster.eventually(
        lambda: _configurations(cluster, setup), what="configurations registered"
    )
    assert _urls(configurations) == {f"https://127.0.0.1:{second.webhooks.port}"}
    await cluster.eventually(lambda: _suspends(cluster, setup), what="the follower answers")
    flavor = await cluster.flavor("rf", {})
    cq = await cluster.cluster_queue("ha", flavor, "2")
    lq = await cluster.local_queue("main", cq)
    created = await cluster.create(JOBS, setup.job("via-follower", lq))
    assert created["spec"]["suspend"] is True
    await cluster.eventually(lambda: _running(cluster, "via-follower"), what="leader runs it")

    # The leader stops cleanly and removes the registration; the survivor puts its own
    # back, takes the Lease over, and both webhooks and queueing carry on.
    await hubs.stop(first)

    async def registered_again() -> list[dict[str, Any]] | None:
        found = await _configurations(cluster, setup)
        return found if found and second.webhooks is not None else None

    again = await cluster.eventually(registered_again, what="survivor re-registered")
    assert _urls(again) == {f"https://127.0.0.1:{second.webhooks.port}"}
    await cluster.eventually(lambda: _leads(second), timeout=10, what="survivor leads")
    await cluster.eventually(lambda: _suspends(cluster, setup), what="the survivor answers")
    created = await cluster.create(JOBS, setup.job("after", lq))
    assert created["spec"]["suspend"] is True
    await cluster.eventually(lambda: _running(cluster, "after"), what="survivor runs it")


async def test_a_hub_whose_webhook_port_is_taken_stops_and_says_why(
    hubs: Any, cluster: Any, setup: WebhookSetup
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        options = dataclasses.replace(setup.options(), webhook_port=taken.getsockname()[1])
        hub: Hub = await hubs.start(
            setup.configuration(LeaderElection(leader_elect=False)), options, wait_ready=False
        )
        task = next(task for running, task, _ in hubs.running if running is hub)
        with pytest.raises(WebhooksFailed) as raised:
            await asyncio.wait_for(task, 60)
    assert "--no-webhooks" in str(raised.value)
    assert "OSError" in str(raised.value) and "address already in use" in str(raised.value)
    # Caches synced, webhooks not serving: /readyz says which.
    assert hub.informers.synced
    assert hub.not_ready_reason() == "webhook server not serving yet"
    assert await _gone(cluster, setup), "nothing registered for a server that never ran"


async def _leads(hub: Hub) -> bool:
    return hub.leading
