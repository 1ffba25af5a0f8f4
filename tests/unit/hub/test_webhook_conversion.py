"""The hub's `/convert` route, and what it writes into the CRDs' conversion webhook: its CA
beside the chart's Service in cluster, its URL out of cluster, and only what differs."""

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
from core.manager.webhooks.crd_conversion import (
    CHART_SERVICE,
    CONVERTED_CRD_NAMES,
    ConversionChange,
    ConversionOutcome,
    conversion_change,
    wanted_client_config,
)
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


PEM = b"PEM"
OTHER_PEM = b"ROTATED"
CHART_CLIENT = {
    "service": {
        "name": "kueue-webhook-service",
        "namespace": "kueue-system",
        "path": "/convert",
        "port": 443,
    }
}


def _b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


def _with_client(client_config: dict[str, Any]) -> dict[str, Any]:
    crd = crd_document(BY_KIND["Workload"])
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = client_config
    return crd


def _client_config(change: ConversionChange) -> dict[str, Any]:
    assert change.crd is not None
    client_config: dict[str, Any] = change.crd["spec"]["conversion"]["webhook"]["clientConfig"]
    return client_config


def test_the_generated_crds_name_the_charts_service_and_no_ca() -> None:
    conversion = crd_document(BY_KIND["Workload"])["spec"]["conversion"]
    assert conversion["webhook"]["clientConfig"] == CHART_CLIENT
    assert ServiceEndpoint("kueue-webhook-service", "kueue-system") == CHART_SERVICE


def test_in_cluster_the_hub_only_injects_its_ca_into_the_charts_crd() -> None:
    crd = crd_document(BY_KIND["Workload"])
    change = conversion_change(crd, CHART_SERVICE, PEM)
    assert change.outcome is ConversionOutcome.WRITE
    assert _client_config(change) == {**CHART_CLIENT, "caBundle": _b64(PEM)}
    assert change.crd is not None
    assert change.crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert change.crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] == ["v1"]
    assert change.crd["spec"]["versions"] == crd["spec"]["versions"], "nothing else changes"
    assert "caBundle" not in crd["spec"]["conversion"]["webhook"]["clientConfig"], (
        "the input is not modified"
    )


def test_a_restart_with_the_same_certificate_writes_nothing() -> None:
    injected = _with_client({**CHART_CLIENT, "caBundle": _b64(PEM)})
    assert conversion_change(injected, CHART_SERVICE, PEM).outcome is ConversionOutcome.KEEP
    # The apiserver may hold the Service without its defaulted port: the same thing.
    service = {k: v for k, v in CHART_CLIENT["service"].items() if k != "port"}
    unported = _with_client({"service": service, "caBundle": _b64(PEM)})
    assert conversion_change(unported, CHART_SERVICE, PEM).outcome is ConversionOutcome.KEEP
    url = _with_client({"url": "https://127.0.0.1:9443/convert", "caBundle": _b64(PEM)})
    assert conversion_change(url, UrlEndpoint.local(9443), PEM).outcome is ConversionOutcome.KEEP
    # Mounted certificates publish no CA of ours: none wanted, none there, nothing to do.
    bare = _with_client({"url": "https://127.0.0.1:9443/convert"})
    assert conversion_change(bare, UrlEndpoint.local(9443), b"").outcome is ConversionOutcome.KEEP


@pytest.mark.parametrize(
    ("current", "endpoint", "ca"),
    [
        pytest.param({**CHART_CLIENT, "caBundle": _b64(PEM)}, CHART_SERVICE, OTHER_PEM, id="ca"),
        pytest.param(
            {"url": "https://127.0.0.1:9443/convert", "caBundle": _b64(PEM)},
            UrlEndpoint.local(9444),
            PEM,
            id="port",
        ),
        pytest.param(
            {"url": "https://127.0.0.1:9443/convert", "caBundle": _b64(PEM)},
            UrlEndpoint.local(9443),
            b"",
            id="ca-dropped",
        ),
    ],
)
def test_any_difference_in_the_client_config_is_written(
    current: dict[str, Any], endpoint: ServiceEndpoint | UrlEndpoint, ca: bytes
) -> None:
    change = conversion_change(_with_client(current), endpoint, ca)
    assert change.outcome is ConversionOutcome.WRITE
    assert _client_config(change) == wanted_client_config(endpoint, ca)


def test_out_of_cluster_the_hub_owns_the_whole_client_config() -> None:
    change = conversion_change(crd_document(BY_KIND["LocalQueue"]), UrlEndpoint.local(9443), PEM)
    assert change.outcome is ConversionOutcome.WRITE
    assert _client_config(change) == {
        "url": "https://127.0.0.1:9443/convert",
        "caBundle": _b64(PEM),
    }


def test_in_cluster_the_hub_puts_the_charts_service_back_over_a_url_left_behind() -> None:
    left = _with_client({"url": "https://127.0.0.1:9443/convert", "caBundle": _b64(OTHER_PEM)})
    change = conversion_change(left, CHART_SERVICE, PEM)
    assert _client_config(change) == {**CHART_CLIENT, "caBundle": _b64(PEM)}


def test_in_cluster_behind_another_service_the_hub_leaves_the_crds_alone() -> None:
    crd = crd_document(BY_KIND["Workload"])
    change = conversion_change(crd, ServiceEndpoint("kueue-webhook-service", "fleetq"), PEM)
    assert change.outcome is ConversionOutcome.LEAVE and change.crd is None
    assert "kueue-system/kueue-webhook-service" in change.reason
    assert "fleetq/kueue-webhook-service" in change.reason


@pytest.mark.parametrize(
    "current",
    [
        CHART_CLIENT,
        {**CHART_CLIENT, "caBundle": _b64(OTHER_PEM)},
        {"url": "https://127.0.0.1:1/convert"},
        {"url": "https://127.0.0.1:1/convert", "caBundle": _b64(OTHER_PEM)},
    ],
)
@pytest.mark.parametrize("endpoint", [CHART_SERVICE, UrlEndpoint.local(9443)])
def test_a_hub_never_leaves_both_url_and_service(
    current: dict[str, Any], endpoint: ServiceEndpoint | UrlEndpoint
) -> None:
    change = conversion_change(_with_client(current), endpoint, PEM)
    result = _client_config(change) if change.crd is not None else current
    assert ("url" in result) != ("service" in result)


def test_crds_that_do_not_convert_by_webhook_are_left_alone() -> None:
    older_crd = crd_document(BY_KIND["Workload"])
    del older_crd["spec"]["conversion"]  # as an older fleetq installed it
    change = conversion_change(older_crd, UrlEndpoint.local(1), PEM)
    assert change.outcome is ConversionOutcome.LEAVE
    flavor = crd_document(BY_KIND["ResourceFlavor"])
    assert conversion_change(flavor, CHART_SERVICE, PEM).outcome is ConversionOutcome.LEAVE


def test_the_converted_crds_are_those_the_generator_gives_a_webhook() -> None:
    webhook_crds = {
        info.crd_name
        for info in map(BY_KIND.__getitem__, BY_KIND)
        if "conversion" in crd_document(info)["spec"]
    }
    assert set(CONVERTED_CRD_NAMES) == webhook_crds
