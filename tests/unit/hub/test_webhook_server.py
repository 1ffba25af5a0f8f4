"""The webhook application over HTTP: routing, AdmissionReview in and out, bad input.

Requests go through aiohttp's test server (plain HTTP; TLS has its own tests), the Job
context comes from the real `CachedJobContext` over small in-memory caches, and answers
are checked the way the apiserver reads them: uid echoed, allowed or denied with a
message, mutations as a base64 JSON Patch that is applied here to see its effect.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from core.api import codec
from core.api.admission_check import AdmissionCheck
from core.api.cluster_queue import ClusterQueue
from core.api.local_queue import LocalQueue
from core.kube.object_meta import make_key
from core.manager.configuration import Configuration
from core.manager.webhooks.job_context import CachedJobContext, JobAdmissionSettings
from core.manager.webhooks.paths import JOB_MUTATE_PATH, JOB_VALIDATE_PATH, VALIDATED, validate_path
from core.manager.webhooks.server import create_app
from integrations.framework.admission_review import AdmissionRequest
from integrations.framework.json_patch import apply_patch
from integrations.framework.webhook_context import WebhookContext as JobWebhookContext
from tests.builders import MultiKueueClusterSet

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CQ_PATH = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue"
LQ_PATH = "/validate-kueue-x-k8s-io-v1beta2-localqueue"


class Cache:
    """An ObjectStore-shaped lookup over a dict."""

    def __init__(self, *objects: Any) -> None:
        self.items = {make_key(o.metadata.namespace, o.metadata.name): o for o in objects}

    def get_by_name(self, name: str, namespace: str | None = None) -> Any:
        return self.items.get(make_key(namespace, name))


def _local_queue(namespace: str, name: str, cluster_queue: str) -> LocalQueue:
    return codec.decode(
        LocalQueue,
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    )


def _provider() -> CachedJobContext:
    cluster_queues = [
        codec.decode(ClusterQueue, {"metadata": {"name": "plain"}}),
        codec.decode(
            ClusterQueue,
            {
                "metadata": {"name": "fleet"},
                "spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]}},
            },
        ),
    ]
    check = codec.decode(
        AdmissionCheck,
        {"metadata": {"name": "mk"}, "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}},
    )
    return CachedJobContext(
        local_queues=Cache(
            _local_queue("team-a", "default", "plain"),
            _local_queue("team-a", "remote", "fleet"),
        ),
        cluster_queues=Cache(*cluster_queues),
        admission_checks=Cache(check),
    )


@pytest_asyncio.fixture(loop_scope="function")
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(create_app(_provider(), max_body_bytes=64 * 1024))) as c:
        yield c


def _job(namespace: str = "team-a", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": namespace, "labels": labels or {}},
        "spec": {
            "parallelism": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
    }


def _review(
    obj: dict[str, Any] | None,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    uid: str = "uid-1",
) -> dict[str, Any]:
    namespace = (obj or old or {}).get("metadata", {}).get("namespace", "")
    request: dict[str, Any] = {"uid": uid, "operation": operation, "namespace": namespace}
    if obj is not None:
        request["object"] = obj
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def _post(client: TestClient[Any, Any], path: str, review: Any) -> dict[str, Any]:
    response = await client.post(path, json=review)
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    assert body["kind"] == "AdmissionReview"
    return body["response"]


def _patched(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    assert response["allowed"] is True
    if "patch" not in response:
        return obj
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    return apply_patch(copy.deepcopy(obj), patch)


def _cluster_queue(spec: dict[str, Any], name: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


# --- routing ---------------------------------------------------------------------------


async def test_every_served_path_answers_a_review_with_its_uid(
    client: TestClient[Any, Any],
) -> None:
    paths = [JOB_MUTATE_PATH, JOB_VALIDATE_PATH, *(kind.path for kind in VALIDATED)]
    assert len(set(paths)) == 12
    for number, path in enumerate(paths):
        uid = f"uid-{number}"
        response = await _post(client, path, _review(None, "DELETE", _job(), uid=uid))
        assert response == {"uid": uid, "allowed": True, "status": {"code": 200}}


def test_kueue_paths_follow_controller_runtime_naming() -> None:
    assert validate_path(VALIDATED[0].info) == CQ_PATH
    assert {kind.info.kind for kind in VALIDATED} == {
        "ClusterQueue",
        "LocalQueue",
        "Cohort",
        "ResourceFlavor",
        "Workload",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "WorkloadPriorityClass",
        "MultiKueueClusterSet",
    }


async def test_unknown_path_is_404_and_get_is_405(client: TestClient[Any, Any]) -> None:
    assert (await client.post("/validate-apps-v1-deployment", json=_review(_job()))).status == 404
    assert (await client.get(JOB_MUTATE_PATH)).status == 405


# --- Job defaulting ---------------------------------------------------------------------


async def test_queued_job_is_suspended_on_create(client: TestClient[Any, Any]) -> None:
    job = _job(labels={QUEUE_LABEL: "default"})
    response = await _post(client, JOB_MUTATE_PATH, _review(job))
    assert _patched(job, response)["spec"]["suspend"] is True


async def test_job_without_queue_gets_default_local_queue_when_one_exists(
    client: TestClient[Any, Any],
) -> None:
    job = _job()
    mutated = _patched(job, await _post(client, JOB_MUTATE_PATH, _review(job)))
    assert mutated["metadata"]["labels"][QUEUE_LABEL] == "default"
    assert mutated["spec"]["suspend"] is True

    elsewhere = _job(namespace="team-b")
    response = await _post(client, JOB_MUTATE_PATH, _review(elsewhere))
    assert "patch" not in response
    assert _patched(elsewhere, response) == elsewhere


async def test_job_whose_queue_leads_to_multikueue_gets_managed_by(
    client: TestClient[Any, Any],
) -> None:
    remote = _job(labels={QUEUE_LABEL: "remote"})
    mutated = _patched(remote, await _post(client, JOB_MUTATE_PATH, _review(remote)))
    assert mutated["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"

    local = _job(labels={QUEUE_LABEL: "default"})
    mutated = _patched(local, await _post(client, JOB_MUTATE_PATH, _review(local)))
    assert "managedBy" not in mutated["spec"]


# --- Job validation ---------------------------------------------------------------------


async def test_invalid_queue_name_is_denied_with_the_field_and_reason(
    client: TestClient[Any, Any],
) -> None:
    job = _job(labels={QUEUE_LABEL: "Team_A"})
    response = await _post(client, JOB_VALIDATE_PATH, _review(job))
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    assert message.startswith(f'metadata.labels[{QUEUE_LABEL}]: Invalid value: "Team_A"')
    assert "RFC 1123" in message


async def test_queue_change_of_a_running_job_is_denied(client: TestClient[Any, Any]) -> None:
    old = _job(labels={QUEUE_LABEL: "default"})
    old["spec"]["suspend"] = False
    new = copy.deepcopy(old)
    new["metadata"]["labels"][QUEUE_LABEL] = "remote"
    response = await _post(client, JOB_VALIDATE_PATH, _review(new, "UPDATE", old))
    assert response["allowed"] is False
    assert "while the job is running" in response["status"]["message"]


# --- kueue objects ----------------------------------------------------------------------


async def test_cluster_queue_breaking_a_webhook_rule_is_denied(
    client: TestClient[Any, Any],
) -> None:
    selector = {"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}
    cq = _cluster_queue({"namespaceSelector": selector})
    response = await _post(client, CQ_PATH, _review(cq))
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "spec.namespaceSelector.matchExpressions[0].values: Required value: operator In needs"
        " values"
    )
    fine = _cluster_queue({"namespaceSelector": {}})
    assert (await _post(client, CQ_PATH, _review(fine)))["allowed"] is True


async def test_a_cluster_set_with_a_selector_nothing_could_match_is_denied(
    client: TestClient[Any, Any],
) -> None:
    path = "/validate-fleetq-dev-v1alpha1-multikueueclusterset"
    selector = {"matchExpressions": [{"key": "pool", "operator": "Resembles", "values": ["gpu"]}]}
    cluster_set = MultiKueueClusterSet("big").spec(clusterSelector=selector).obj()
    response = await _post(client, path, _review(cluster_set))
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "spec.clusterSelector.matchExpressions[0].operator: Invalid value: 'Resembles' is not"
        " one of In, NotIn, Exists, DoesNotExist"
    )
    fine = MultiKueueClusterSet("big").clusters("a").selector({"pool": "gpu"}).obj()
    assert (await _post(client, path, _review(fine)))["allowed"] is True


async def test_update_rules_apply_to_updates(client: TestClient[Any, Any]) -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team-a"},
        "spec": {"clusterQueue": "plain"},
    }
    moved = copy.deepcopy(old)
    moved["spec"]["clusterQueue"] = "fleet"
    response = await _post(client, LQ_PATH, _review(moved, "UPDATE", old))
    assert response["allowed"] is False
    assert "spec.clusterQueue" in response["status"]["message"]
    # Creating the same object is fine: the rule is about change.
    assert (await _post(client, LQ_PATH, _review(moved)))["allowed"] is True


async def test_object_of_the_wrong_shape_is_denied_with_its_path(
    client: TestClient[Any, Any],
) -> None:
    cq = _cluster_queue({"cohortName": 5})
    response = await _post(client, CQ_PATH, _review(cq))
    assert response["allowed"] is False
    assert response["status"]["message"].startswith("spec.cohortName: Invalid value: Expected")


async def test_object_of_another_kind_is_denied(client: TestClient[Any, Any]) -> None:
    response = await _post(client, CQ_PATH, _review(_job()))
    assert response["allowed"] is False
    assert "handles ClusterQueue objects, not Job" in response["status"]["message"]
    for path in (JOB_MUTATE_PATH, JOB_VALIDATE_PATH):
        response = await _post(client, path, _review(_cluster_queue({})))
        assert response["allowed"] is False
        assert "handles Job objects, not ClusterQueue" in response["status"]["message"]


# --- bad bodies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b"{not json", "application/json", "body is not JSON"),
        (b"", "application/json", "empty body"),
        (b"[1, 2]", "application/json", "got a JSON list"),
        (b'{"kind": "Pod"}', "application/json", "expected kind AdmissionReview"),
        (b'{"kind": "AdmissionReview"}', "application/json", "has no request"),
        (b'{"request": {"operation": "CREATE"}}', "application/json", "has no uid"),
        (b'{"request": {"uid": "u", "operation": "EXPLODE"}}', "application/json", "EXPLODE"),
        (b"{}", "text/plain", "Content-Type must be application/json"),
    ],
)
async def test_bad_bodies_get_400_with_a_status_message(
    client: TestClient[Any, Any], body: bytes, content_type: str, expected: str
) -> None:
    for path in (JOB_MUTATE_PATH, CQ_PATH):
        response = await client.post(path, data=body, headers={"Content-Type": content_type})
        assert response.status == 400
        status = await response.json()
        assert status["kind"] == "Status"
        assert status["code"] == 400
        assert expected in status["message"]


async def test_oversized_body_gets_400(client: TestClient[Any, Any]) -> None:
    job = _job()
    job["metadata"]["annotations"] = {"padding": "x" * 70_000}
    response = await client.post(JOB_MUTATE_PATH, json=_review(job))
    assert response.status == 400
    assert "larger than 65536 bytes" in (await response.json())["message"]


class FailingProvider:
    def __init__(self) -> None:
        self.calls = 0

    async def job_context(self, request: AdmissionRequest) -> JobWebhookContext:
        self.calls += 1
        if self.calls == 1:
            raise LookupError("cache not synced")
        return JobWebhookContext()


async def test_provider_failure_is_a_denial_and_the_server_keeps_serving() -> None:
    provider = FailingProvider()
    async with TestClient(TestServer(create_app(provider))) as client:
        first = await _post(client, JOB_MUTATE_PATH, _review(_job(), uid="one"))
        assert first["uid"] == "one"
        assert first["allowed"] is False
        assert first["status"]["code"] == 500
        assert "LookupError: cache not synced" in first["status"]["message"]
        job = _job(labels={QUEUE_LABEL: "q"})
        second = await _post(client, JOB_MUTATE_PATH, _review(job, uid="two"))
        assert second["uid"] == "two"
        assert _patched(job, second)["spec"]["suspend"] is True


async def test_manage_jobs_without_queue_name_follows_the_namespace_selector() -> None:
    namespaces = Cache()
    namespaces.items = {"managed": {"metadata": {"name": "managed", "labels": {"jobs": "on"}}}}
    provider = CachedJobContext(
        local_queues=Cache(),
        cluster_queues=Cache(),
        admission_checks=Cache(),
        namespaces=namespaces,
        settings=JobAdmissionSettings(
            manage_jobs_without_queue_name=True,
            managed_jobs_namespace_selector={"matchLabels": {"jobs": "on"}},
        ),
    )
    async with TestClient(TestServer(create_app(provider))) as client:
        inside = _job(namespace="managed")
        mutated = _patched(inside, await _post(client, JOB_MUTATE_PATH, _review(inside)))
        assert mutated["spec"]["suspend"] is True
        outside = _job(namespace="unmanaged")
        response = await _post(client, JOB_MUTATE_PATH, _review(outside))
        assert "patch" not in response


async def test_settings_from_the_hub_configuration_exclude_system_namespaces() -> None:
    settings = JobAdmissionSettings.from_configuration(
        Configuration(manage_jobs_without_queue_name=True)
    )
    namespaces = Cache()
    namespaces.items = {
        name: {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}
        for name in ("kube-system", "research")
    }
    provider = CachedJobContext(
        local_queues=Cache(),
        cluster_queues=Cache(),
        admission_checks=Cache(),
        namespaces=namespaces,
        settings=settings,
    )
    assert provider.namespace_selected("research") is True
    assert provider.namespace_selected("kube-system") is False
    assert provider.namespace_selected("never-seen") is False


async def test_with_jobset_enabled_its_paths_serve_and_its_child_jobs_are_left_alone() -> None:
    """JobSet on: `/mutate-jobset-...` suspends a queued JobSet; a Job the JobSet owns
    gets neither the default queue nor a suspend of its own (it is queued with it)."""
    configuration = Configuration(
        manage_jobs_without_queue_name=True,
        frameworks=("batch/job", "jobset.x-k8s.io/jobset"),
    )
    settings = JobAdmissionSettings.from_configuration(configuration)
    assert settings.managed_owner_kinds == frozenset({("jobset.x-k8s.io", "JobSet")})
    provider = CachedJobContext(
        local_queues=Cache(_local_queue("team-a", "default", "plain")),
        cluster_queues=Cache(),
        admission_checks=Cache(),
        settings=settings,
    )
    jobset_path = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
    async with TestClient(TestServer(create_app(provider, configuration.job_kinds))) as client:
        jobset = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "team-a", "labels": {QUEUE_LABEL: "q"}},
            "spec": {"replicatedJobs": []},
        }
        mutated = _patched(jobset, await _post(client, jobset_path, _review(jobset)))
        assert mutated["spec"]["suspend"] is True
        child = _job()
        child["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "js",
                "uid": "u",
                "controller": True,
            }
        ]
        response = await _post(client, JOB_MUTATE_PATH, _review(child))
        assert "patch" not in response, "a JobSet's Job is not defaulted on its own"
        plain = _patched(_job(), await _post(client, JOB_MUTATE_PATH, _review(_job())))
        assert plain["metadata"]["labels"][QUEUE_LABEL] == "default"
        assert plain["spec"]["suspend"] is True
