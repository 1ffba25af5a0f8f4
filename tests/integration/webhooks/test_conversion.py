"""kueue.x-k8s.io/v1beta1 through a real apiserver and the hub's `/convert` endpoint.

The CRDs are pointed at the in-process webhook server (as an out-of-cluster hub does),
then objects are written in one version and read in the other: what a Kueue user with
v1beta1 manifests, or a v1beta1 client reading fleetq's objects, meets. At the end the
CRDs get their generated conversion settings back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from core.api.conversion.preserved import PRESERVED_FIELDS_ANNOTATION
from core.api.conversion.versions import V1BETA1, V1BETA2
from core.api.registry import KINDS, KindInfo, kind_info
from core.kube.errors import NotFound
from core.manager.webhooks.ca_injection import CaBundleSync
from core.manager.webhooks.configurations import UrlEndpoint
from core.manager.webhooks.crd_conversion import (
    CONVERTED_CRD_NAMES,
    CUSTOM_RESOURCE_DEFINITIONS,
    CrdConversion,
    sync_crd_conversions,
)
from tests.integration.converted_crds import restore_chart_conversion, wait_serving
from tests.integration.webhooks.conftest import WebhookHub

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def in_v1beta1(kind: str) -> KindInfo:
    return dataclasses.replace(kind_info(kind), version=V1BETA1)


CONVERTED = tuple(info for info in KINDS if info.crd_name in CONVERTED_CRD_NAMES)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def converting_hub(webhook_hub: WebhookHub) -> AsyncIterator[WebhookHub]:
    client = webhook_hub.client
    conversion = CrdConversion(UrlEndpoint.local(webhook_hub.server.port))
    webhook_hub.cert_manager.crd_conversion = conversion
    results = await sync_crd_conversions(
        client, conversion, webhook_hub.cert_manager.published_ca_bundle
    )
    assert results and set(results) <= {CaBundleSync.UPDATED, CaBundleSync.UNCHANGED}
    # The write reinitialised each CRD's storage: wait for both versions' watch caches
    # (v1beta1's fills through this server), or a v1beta1 list below meets 429.
    await wait_serving(client, versions=(V1BETA1, V1BETA2))
    again = await sync_crd_conversions(
        client, conversion, webhook_hub.cert_manager.published_ca_bundle
    )
    assert set(again) == {CaBundleSync.UNCHANGED}, "a second sync writes nothing"
    try:
        yield webhook_hub
    finally:
        webhook_hub.cert_manager.crd_conversion = None
        await restore_chart_conversion(client)


@pytest_asyncio.fixture(loop_scope="session")
async def made(converting_hub: WebhookHub) -> AsyncIterator[list[tuple[KindInfo, str, str | None]]]:
    created: list[tuple[KindInfo, str, str | None]] = []
    yield created
    for info, name, namespace in reversed(created):
        with contextlib.suppress(NotFound):
            await converting_hub.client.delete(info, name, namespace=namespace)


def suffix() -> str:
    return uuid.uuid4().hex[:8]


async def test_every_converted_kind_lists_in_v1beta1_from_the_cache_at_once(
    converting_hub: WebhookHub,
) -> None:
    """What failed in CI when the wait only listed v1beta2 with a limit (answered by etcd
    while the caches were still initialising): a list with no limit, answered by the
    v1beta1 watch cache, right after the CRDs were pointed at the hub."""
    namespace = await converting_hub.create_namespace("conv-list")
    for info in CONVERTED:
        scope = namespace if info.namespaced else None  # the shared cluster's objects stay out
        listed = await converting_hub.client.list(in_v1beta1(info.kind), namespace=scope)
        assert all(item["apiVersion"] == V1 for item in listed.items), info.kind


async def test_crds_point_at_the_hub_with_its_ca(converting_hub: WebhookHub) -> None:
    crd = await converting_hub.client.get(CUSTOM_RESOURCE_DEFINITIONS, "workloads.kueue.x-k8s.io")
    client_config = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    assert client_config["url"] == f"https://127.0.0.1:{converting_hub.server.port}/convert"
    assert client_config["caBundle"]


async def test_queues_written_in_v1beta1_read_in_v1beta2(
    converting_hub: WebhookHub, made: list[tuple[KindInfo, str, str | None]]
) -> None:
    client = converting_hub.client
    namespace = await converting_hub.create_namespace("conv")
    tag = suffix()
    flavor, queue = f"rf-{tag}", f"cq-{tag}"
    await client.create(
        in_v1beta1("ResourceFlavor"),
        {"apiVersion": V1, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
    )
    made.append((kind_info("ResourceFlavor"), flavor, None))
    await client.create(
        in_v1beta1("ClusterQueue"),
        {
            "apiVersion": V1,
            "kind": "ClusterQueue",
            "metadata": {"name": queue},
            "spec": {
                "cohort": f"team-{tag}",
                "admissionChecks": [f"check-{tag}"],
                "namespaceSelector": {},
                "flavorFungibility": {"whenCanBorrow": "Borrow"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}
                        ],
                    }
                ],
            },
        },
    )
    made.append((kind_info("ClusterQueue"), queue, None))
    await client.create(
        in_v1beta1("LocalQueue"),
        {
            "apiVersion": V1,
            "kind": "LocalQueue",
            "metadata": {"name": "team", "namespace": namespace},
            "spec": {"clusterQueue": queue},
        },
    )

    stored = await client.get(kind_info("ClusterQueue"), queue)
    assert stored["apiVersion"] == V2
    assert stored["spec"]["cohortName"] == f"team-{tag}"
    assert "cohort" not in stored["spec"]
    assert stored["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": f"check-{tag}"}]
    }
    assert stored["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
    assert (await client.get(kind_info("ResourceFlavor"), flavor))["apiVersion"] == V2
    local = await client.get(kind_info("LocalQueue"), "team", namespace=namespace)
    assert local["spec"]["clusterQueue"] == queue

    again = await client.get(in_v1beta1("ClusterQueue"), queue)
    assert again["apiVersion"] == V1
    assert again["spec"]["cohort"] == f"team-{tag}"
    listed = await client.list(in_v1beta1("LocalQueue"), namespace=namespace)
    assert [item["apiVersion"] for item in listed.items] == [V1]


async def test_v1beta2_only_fields_survive_a_v1beta1_read_and_write(
    converting_hub: WebhookHub, made: list[tuple[KindInfo, str, str | None]]
) -> None:
    client = converting_hub.client
    name = f"cq-{suffix()}"
    policy = {"migration": {"mode": "TryPreferredFlavors"}}
    await client.create(
        kind_info("ClusterQueue"),
        {
            "apiVersion": V2,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"cohortName": "shared", "concurrentAdmissionPolicy": policy},
        },
    )
    made.append((kind_info("ClusterQueue"), name, None))
    old = await client.get(in_v1beta1("ClusterQueue"), name)
    assert old["spec"]["cohort"] == "shared"
    assert "concurrentAdmissionPolicy" not in old["spec"]
    assert PRESERVED_FIELDS_ANNOTATION in old["metadata"]["annotations"]

    old["metadata"].setdefault("labels", {})["edited-in"] = "v1beta1"
    await client.replace(in_v1beta1("ClusterQueue"), name, old)

    stored = await client.get(kind_info("ClusterQueue"), name)
    assert stored["metadata"]["labels"]["edited-in"] == "v1beta1"
    assert stored["spec"]["concurrentAdmissionPolicy"] == policy
    assert PRESERVED_FIELDS_ANNOTATION not in (stored["metadata"].get("annotations") or {})


async def test_a_workload_priority_and_status_in_both_versions(
    converting_hub: WebhookHub,
) -> None:
    client = converting_hub.client
    namespace = await converting_hub.create_namespace("conv-wl")
    await client.create(
        in_v1beta1("Workload"),
        {
            "apiVersion": V1,
            "kind": "Workload",
            "metadata": {"name": "wl", "namespace": namespace},
            "spec": {
                "queueName": "team",
                "priority": 10,
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "priorityClassName": "high",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": "1"}}}
                                ]
                            }
                        },
                    }
                ],
            },
        },
    )
    stored = await client.get(kind_info("Workload"), "wl", namespace=namespace)
    assert stored["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    stored["status"] = {"accumulatedPastExecutionTimeSeconds": 42}
    await client.replace(
        kind_info("Workload"), "wl", stored, namespace=namespace, subresource="status"
    )
    old = await client.get(in_v1beta1("Workload"), "wl", namespace=namespace)
    assert old["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
    assert old["spec"]["priorityClassName"] == "high"
    assert old["status"]["accumulatedPastExexcutionTimeSeconds"] == 42


async def test_a_multikueue_cluster_written_in_v1beta1_has_a_cluster_source(
    converting_hub: WebhookHub, made: list[tuple[KindInfo, str, str | None]]
) -> None:
    client = converting_hub.client
    name = f"worker-{suffix()}"
    kube_config: dict[str, Any] = {"location": "worker-secret", "locationType": "Secret"}
    await client.create(
        in_v1beta1("MultiKueueCluster"),
        {
            "apiVersion": V1,
            "kind": "MultiKueueCluster",
            "metadata": {"name": name},
            "spec": {"kubeConfig": kube_config},
        },
    )
    made.append((kind_info("MultiKueueCluster"), name, None))
    stored = await client.get(kind_info("MultiKueueCluster"), name)
    assert stored["spec"] == {"clusterSource": {"kubeConfig": kube_config}}
