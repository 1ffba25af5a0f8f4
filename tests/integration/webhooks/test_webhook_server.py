"""The webhook server behind a real apiserver: Jobs defaulted and validated, kueue objects
validated beyond their CRDs, and a certificate rotation nobody notices.

Every request here goes client → apiserver → webhook configuration → TLS → our server and
back, so what is checked is what a user of the cluster sees.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime as dt
import uuid
from typing import Any

import pytest
from cryptography import x509

from core.api.registry import kind_info
from core.kube.errors import ApiError, NotFound
from core.kube.resources import JOBS, SECRETS
from core.manager.webhook_certs import CertBundle, issue
from core.manager.webhooks.ca_injection import CaBundleSync, sync_ca_bundle
from core.manager.webhooks.cert_secret import CertSecret
from core.manager.webhooks.configurations import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    validating_configuration,
)
from core.manager.webhooks.paths import VALIDATED

pytestmark = pytest.mark.asyncio(loop_scope="session")

CLUSTER_QUEUES = kind_info("ClusterQueue")
LOCAL_QUEUES = kind_info("LocalQueue")
ADMISSION_CHECKS = kind_info("AdmissionCheck")
WORKLOADS = kind_info("Workload")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# The `webhook_hub` fixture (conftest.py): client, labels, namespaces, certificate manager.
WebhookHub = Any


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _cluster_queue(name: str, spec: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_QUEUES.api_version,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def _local_queue(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {
        "apiVersion": LOCAL_QUEUES.api_version,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


async def _wait_cached(hub: WebhookHub, namespace: str, name: str) -> None:
    """The hub answers from its informer cache: wait until the LocalQueue is in it."""
    for _ in range(100):
        if hub.local_queues.store.get_by_name(name, namespace) is not None:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"LocalQueue {namespace}/{name} never reached the informer cache")


async def test_job_with_a_queue_comes_back_suspended(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-jobs")
    created = await hub.client.create(JOBS, hub.job("queued", namespace, {QUEUE_LABEL: "team"}))
    assert created["spec"]["suspend"] is True

    # Outside the test label's reach nothing is touched: the scoping other tests rely on.
    untouched = await hub.create_namespace("wh-out", in_scope=False)
    plain = await hub.client.create(JOBS, hub.job("queued", untouched, {QUEUE_LABEL: "team"}))
    assert plain["spec"].get("suspend") is not True


async def test_default_local_queue_is_filled_in(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-default")
    before = await hub.client.create(JOBS, hub.job("before", namespace))
    assert QUEUE_LABEL not in (before["metadata"].get("labels") or {})

    await hub.client.create(LOCAL_QUEUES, _local_queue("default", namespace, "any-cq"))
    await _wait_cached(hub, namespace, "default")
    after = await hub.client.create(JOBS, hub.job("after", namespace))
    assert after["metadata"]["labels"][QUEUE_LABEL] == "default"
    assert after["spec"]["suspend"] is True


async def test_queue_leading_to_multikueue_sets_managed_by(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-mk")
    check, cq = _unique("wh-mk-check"), _unique("wh-mk-cq")
    await hub.client.create(
        ADMISSION_CHECKS,
        {
            "apiVersion": ADMISSION_CHECKS.api_version,
            "kind": "AdmissionCheck",
            "metadata": {"name": check, "labels": hub.labels},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue"},
        },
    )
    strategy = {"admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}
    await hub.client.create(CLUSTER_QUEUES, _cluster_queue(cq, strategy, hub.labels))
    try:
        await hub.client.create(LOCAL_QUEUES, _local_queue("remote", namespace, cq))
        await _wait_cached(hub, namespace, "remote")
        created = None
        for _ in range(100):  # the ClusterQueue and check may reach the cache later still
            created = await hub.client.create(
                JOBS, hub.job("dispatched", namespace, {QUEUE_LABEL: "remote"}), dry_run=True
            )
            if created["spec"].get("managedBy"):
                break
            await asyncio.sleep(0.05)
        assert created is not None
        assert created["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        assert created["spec"]["suspend"] is True
    finally:
        for resource, name in ((CLUSTER_QUEUES, cq), (ADMISSION_CHECKS, check)):
            with contextlib.suppress(NotFound):
                await hub.client.delete(resource, name)


async def test_invalid_queue_name_is_rejected_with_the_message(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-invalid")
    with pytest.raises(ApiError) as raised:
        await hub.client.create(JOBS, hub.job("bad", namespace, {QUEUE_LABEL: "Team_A"}))
    error = raised.value
    assert error.status == 403
    assert 'admission webhook "vjob.fleetq.dev" denied the request' in error.message
    assert f'metadata.labels[{QUEUE_LABEL}]: Invalid value: "Team_A"' in error.message
    assert "lowercase RFC 1123 subdomain" in error.message
    with pytest.raises(NotFound):
        await hub.client.get(JOBS, "bad", namespace=namespace)


async def test_cluster_queue_rule_beyond_the_crd_is_rejected(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    selector = {"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}
    spec = {"namespaceSelector": selector}

    # The CRD alone lets it through: without the label our webhook never sees it.
    unchecked = _unique("wh-cq-unchecked")
    await hub.client.create(CLUSTER_QUEUES, _cluster_queue(unchecked, spec, {}))
    await hub.client.delete(CLUSTER_QUEUES, unchecked)

    with pytest.raises(ApiError) as raised:
        await hub.client.create(CLUSTER_QUEUES, _cluster_queue(_unique("wh-cq"), spec, hub.labels))
    assert raised.value.status == 403
    assert 'admission webhook "vclusterqueue.fleetq.dev" denied the request' in (
        raised.value.message
    )
    assert (
        "spec.namespaceSelector.matchExpressions[0].values: Required value: operator In needs"
        " values" in raised.value.message
    )

    # A valid one with the label passes the same webhook.
    fine = _unique("wh-cq-fine")
    await hub.client.create(CLUSTER_QUEUES, _cluster_queue(fine, {}, hub.labels))
    await hub.client.delete(CLUSTER_QUEUES, fine)


async def test_workload_with_a_negative_request_is_rejected_with_upstreams_message(
    webhook_hub: WebhookHub,
) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-wl")

    def workload(name: str, cpu: str) -> dict[str, Any]:
        container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
        return {
            "apiVersion": WORKLOADS.api_version,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "labels": hub.labels},
            "spec": {
                "queueName": "main",
                "podSets": [{"name": "main", "template": {"spec": {"containers": [container]}}}],
            },
        }

    # The CRD's quantity pattern allows a sign: only the webhook stands in the way.
    with pytest.raises(ApiError) as raised:
        await hub.client.create(WORKLOADS, workload(_unique("negative"), "-4"))
    assert raised.value.status == 403
    assert 'admission webhook "vworkload.fleetq.dev" denied the request' in raised.value.message
    assert (
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value:"
        ' "-4": must be greater than or equal to 0' in raised.value.message
    )

    fine = _unique("positive")
    created = await hub.client.create(WORKLOADS, workload(fine, "4"))
    assert created["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"]
    await hub.client.delete(WORKLOADS, fine, namespace=namespace)


def _secret_bytes(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


async def _ca_bundles(hub: WebhookHub) -> list[bytes]:
    bundles: list[bytes] = []
    for resource, name in (
        (MUTATING_WEBHOOK_CONFIGURATIONS, hub.settings.mutating_name),
        (VALIDATING_WEBHOOK_CONFIGURATIONS, hub.settings.validating_name),
    ):
        configuration = await hub.client.get(resource, name)
        bundles += [
            base64.b64decode(webhook["clientConfig"]["caBundle"])
            for webhook in configuration["webhooks"]
        ]
    return bundles


def _issuer_key(cert_pem: bytes, ca_pem: bytes) -> None:
    """Raises unless `cert_pem` was signed by `ca_pem`."""
    x509.load_pem_x509_certificate(cert_pem).verify_directly_issued_by(
        x509.load_pem_x509_certificate(ca_pem)
    )


async def test_rotation_updates_secret_and_ca_bundle_while_requests_keep_working(
    webhook_hub: WebhookHub,
) -> None:
    hub = webhook_hub
    namespace = await hub.create_namespace("wh-rotate")
    secret_name = hub.cert_manager.secret.name
    before = await hub.client.get(SECRETS, secret_name, namespace=hub.hub_namespace)
    old_ca, old_cert = _secret_bytes(before, "ca.crt"), _secret_bytes(before, "tls.crt")
    assert hub.certificate.cert_pem == old_cert

    failures: list[str] = []
    answered = 0
    stop = asyncio.Event()

    async def keep_creating() -> None:
        nonlocal answered
        number = 0
        while not stop.is_set():
            number += 1
            body = hub.job(f"during-{number}", namespace, {QUEUE_LABEL: "team"})
            try:
                created = await hub.client.create(JOBS, body, dry_run=True)
            except ApiError as error:
                failures.append(error.message)
            else:
                if created["spec"].get("suspend") is not True:
                    failures.append(f"request {number} was not mutated")
                answered += 1
            await asyncio.sleep(0.05)

    traffic = asyncio.create_task(keep_creating())
    try:
        hub.renewal.force()
        await hub.cert_manager.reconcile()
        await asyncio.sleep(1.0)  # some calls on the new certificate too
    finally:
        stop.set()
        await traffic

    after = await hub.client.get(SECRETS, secret_name, namespace=hub.hub_namespace)
    new_ca, new_cert = _secret_bytes(after, "ca.crt"), _secret_bytes(after, "tls.crt")
    assert new_ca != old_ca and new_cert != old_cert
    assert _secret_bytes(after, "previous-ca.crt") == old_ca
    _issuer_key(new_cert, new_ca)
    assert hub.certificate.cert_pem == new_cert

    bundles = await _ca_bundles(hub)
    # The Job's mutating and validating webhooks, and one per validated kueue/fleetq kind.
    assert len(bundles) == 1 + 1 + len(VALIDATED)
    # Both CAs are trusted for a while, so replicas still serving the old one keep working.
    assert all(bundle == new_ca + old_ca for bundle in bundles)

    assert failures == []
    assert answered > 5

    # Still working after the rotation, outside the dry-run path too.
    created = await hub.client.create(
        JOBS, hub.job("after-rotation", namespace, {QUEUE_LABEL: "q"})
    )
    assert created["spec"]["suspend"] is True

    # A check with nothing to renew changes nothing.
    await hub.cert_manager.reconcile()
    unchanged = await hub.client.get(SECRETS, secret_name, namespace=hub.hub_namespace)
    assert unchanged["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


async def test_two_replicas_racing_on_the_secret_end_with_one_certificate(
    webhook_hub: WebhookHub,
) -> None:
    hub = webhook_hub
    name = _unique("race-certs")
    now = dt.datetime.now(dt.UTC)
    replicas = [
        CertSecret(hub.client, namespace=hub.hub_namespace, name=name, hosts=["svc"])
        for _ in range(2)
    ]
    first, second = await asyncio.gather(*(replica.ensure(now) for replica in replicas))
    assert first.bundle == second.bundle
    stored = await hub.client.get(SECRETS, name, namespace=hub.hub_namespace)
    assert _secret_bytes(stored, "tls.crt") == first.bundle.tls_cert

    # Both find the certificate expiring at once: one replace wins, the other's Conflict
    # makes it re-read and adopt the winner's certificate instead of rotating again.
    def expiring(bundle: CertBundle, hosts: list[str], now: dt.datetime) -> str | None:
        return "expiring" if bundle == first.bundle else None

    rotating = [
        CertSecret(
            hub.client,
            namespace=hub.hub_namespace,
            name=name,
            hosts=["svc"],
            renewal_policy=expiring,
        )
        for _ in range(2)
    ]
    a, b = await asyncio.gather(*(replica.ensure(now) for replica in rotating))
    assert a.bundle == b.bundle
    assert a.bundle != first.bundle
    assert a.previous_ca == first.bundle.ca_cert
    rotated = await hub.client.get(SECRETS, name, namespace=hub.hub_namespace)
    assert _secret_bytes(rotated, "tls.crt") == a.bundle.tls_cert
    assert _secret_bytes(rotated, "previous-ca.crt") == first.bundle.ca_cert


async def test_concurrent_ca_bundle_syncs_write_once(webhook_hub: WebhookHub) -> None:
    hub = webhook_hub
    name = _unique("fleetq-test-never-matches")
    settings = dataclasses.replace(
        hub.settings,
        validating_name=name,
        kueue_object_selector={"matchLabels": {"fleetq.dev/never": name}},
        job_namespace_selector={"matchLabels": {"fleetq.dev/never": name}},
    )
    await hub.client.apply(
        VALIDATING_WEBHOOK_CONFIGURATIONS,
        name,
        validating_configuration(settings),
        field_manager="fleetq-tests",
    )
    try:
        ca = issue(["svc"], dt.datetime.now(dt.UTC)).ca_cert
        results = await asyncio.gather(
            *(sync_ca_bundle(hub.client, VALIDATING_WEBHOOK_CONFIGURATIONS, name, ca) for _ in "ab")
        )
        assert sorted(results) == [CaBundleSync.UNCHANGED, CaBundleSync.UPDATED]
        assert (
            await sync_ca_bundle(hub.client, VALIDATING_WEBHOOK_CONFIGURATIONS, name, ca)
            is CaBundleSync.UNCHANGED
        )
        configuration = await hub.client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, name)
        assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {
            base64.b64encode(ca).decode()
        }
    finally:
        await hub.client.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, name)
    assert (
        await sync_ca_bundle(hub.client, VALIDATING_WEBHOOK_CONFIGURATIONS, name, ca)
        is CaBundleSync.MISSING
    )
