"""The hub's `/convert` route and how it keeps the CRDs' conversion webhook its own."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from core.api.crdgen.crd import crd_document
from core.api.registry import BY_KIND
from core.manager.webhooks.configurations import ServiceEndpoint, UrlEndpoint
from core.manager.webhooks.crd_conversion import CONVERTED_CRD_NAMES, with_conversion_client
from core.manager.webhooks.job_context import CachedJobContext, JobAdmissionSettings
from core.manager.webhooks.server import create_app


class Empty:
    def get_by_name(self, name: str, namespace: str | None = None) -> Any:
        return None


@pytest_asyncio.fixture(loop_scope="function")
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    provider = CachedJobContext(
        local_queues=Empty(),
        cluster_queues=Empty(),
        admission_checks=Empty(),
        namespaces=Empty(),
        settings=JobAdmissionSettings(),
    )
    async with TestClient(TestServer(create_app(provider, max_body_bytes=64 * 1024))) as c:
        yield c


def review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u-7", "desiredAPIVersion": desired, "objects": list(objects)},
    }


V1_QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
    "spec": {"cohort": "team", "admissionChecks": ["mk"]},
}


@pytest.mark.asyncio(loop_scope="function")
async def test_convert_answers_a_conversion_review(client: TestClient[Any, Any]) -> None:
    response = await client.post("/convert", json=review("kueue.x-k8s.io/v1beta2", V1_QUEUE))
    assert response.status == 200
    answer = await response.json()
    assert answer["kind"] == "ConversionReview"
    assert answer["response"]["uid"] == "u-7"
    assert answer["response"]["result"] == {"status": "Success"}
    (converted,) = answer["response"]["convertedObjects"]
    assert converted["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert converted["spec"] == {
        "cohortName": "team",
        "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]},
    }


@pytest.mark.asyncio(loop_scope="function")
async def test_convert_fails_an_unconvertible_object_with_its_name(
    client: TestClient[Any, Any],
) -> None:
    response = await client.post("/convert", json=review("kueue.x-k8s.io/v1alpha9", V1_QUEUE))
    result = (await response.json())["response"]["result"]
    assert result["status"] == "Failure"
    assert "ClusterQueue cq" in result["message"]


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"not json", "application/json"), (b"{}", "text/plain"), (b"[1]", "application/json")],
)
async def test_convert_refuses_what_is_not_a_review(
    client: TestClient[Any, Any], body: bytes, content_type: str
) -> None:
    response = await client.post("/convert", data=body, headers={"Content-Type": content_type})
    assert response.status == 400
    assert (await response.json())["kind"] == "Status"


def test_crds_convert_through_the_hub_service_trusting_its_ca() -> None:
    crd = crd_document(BY_KIND["Workload"])
    endpoint = ServiceEndpoint("fleetq-hub-webhook-service", "fleetq")
    updated = with_conversion_client(crd, endpoint, b"PEM")
    assert updated is not None
    webhook = updated["spec"]["conversion"]["webhook"]
    assert webhook["clientConfig"] == {
        "service": {
            "name": "fleetq-hub-webhook-service",
            "namespace": "fleetq",
            "path": "/convert",
            "port": 443,
        },
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    assert webhook["conversionReviewVersions"] == ["v1"]
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"] == (
        "kueue-system"
    ), "the input is not modified"
    assert with_conversion_client(updated, endpoint, b"PEM") is None, "nothing to do twice"


def test_out_of_cluster_the_crds_convert_through_the_hub_url() -> None:
    crd = crd_document(BY_KIND["LocalQueue"])
    updated = with_conversion_client(crd, UrlEndpoint.local(9443), b"")
    assert updated is not None
    assert updated["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/convert"
    }


def test_crds_that_do_not_convert_by_webhook_are_left_alone() -> None:
    older_crd = crd_document(BY_KIND["Workload"])
    del older_crd["spec"]["conversion"]  # as an older fleetq installed it
    assert with_conversion_client(older_crd, UrlEndpoint.local(1), b"PEM") is None
    flavor = crd_document(BY_KIND["ResourceFlavor"])
    assert with_conversion_client(flavor, UrlEndpoint.local(1), b"PEM") is None


def test_the_converted_crds_are_those_the_generator_gives_a_webhook() -> None:
    webhook_crds = {
        info.crd_name
        for info in map(BY_KIND.__getitem__, BY_KIND)
        if "conversion" in crd_document(info)["spec"]
    }
    assert set(CONVERTED_CRD_NAMES) == webhook_crds
