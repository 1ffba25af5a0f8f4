"""The webhook configurations the hub registers, and keeping their caBundle current."""

from __future__ import annotations

import base64
from typing import Any

from core.manager.webhooks.ca_injection import with_ca_bundle
from core.manager.webhooks.configurations import (
    ServiceEndpoint,
    UrlEndpoint,
    WebhookSettings,
    mutating_configuration,
    validating_configuration,
)
from core.manager.webhooks.paths import JOB_MUTATE_PATH, JOB_VALIDATE_PATH, VALIDATED

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _settings(**overrides: Any) -> WebhookSettings:
    values: dict[str, Any] = {
        "endpoint": ServiceEndpoint("fleetq-webhook", "fleetq-system"),
        "hub_namespace": "fleetq-system",
        "ca_bundle": CA,
    }
    values.update(overrides)
    return WebhookSettings(**values)


def _by_name(configuration: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {webhook["name"]: webhook for webhook in configuration["webhooks"]}


def test_mutating_configuration_defaults_jobs_on_create_through_the_service() -> None:
    configuration = mutating_configuration(_settings())
    assert configuration["kind"] == "MutatingWebhookConfiguration"
    assert configuration["metadata"] == {"name": "fleetq-mutating-webhook-configuration"}
    (webhook,) = configuration["webhooks"]
    assert webhook["name"] == "mjob.fleetq.dev"
    assert webhook["clientConfig"] == {
        "service": {
            "name": "fleetq-webhook",
            "namespace": "fleetq-system",
            "path": JOB_MUTATE_PATH,
            "port": 443,
        },
        "caBundle": base64.b64encode(CA).decode(),
    }
    assert webhook["rules"] == [
        {
            "apiGroups": ["batch"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["jobs"],
            "scope": "Namespaced",
        }
    ]
    assert webhook["sideEffects"] == "None"
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["timeoutSeconds"] == 10
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["fleetq-system", "kube-system"],
            }
        ]
    }


def test_validating_configuration_covers_jobs_and_every_validated_kind() -> None:
    configuration = validating_configuration(_settings())
    assert configuration["metadata"]["name"] == "fleetq-validating-webhook-configuration"
    webhooks = _by_name(configuration)
    assert len(webhooks) == 1 + len(VALIDATED)
    job = webhooks["vjob.fleetq.dev"]
    assert job["clientConfig"]["service"]["path"] == JOB_VALIDATE_PATH
    assert job["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert "namespaceSelector" in job
    for kind in VALIDATED:
        webhook = webhooks[f"v{kind.info.singular}.fleetq.dev"]
        assert webhook["clientConfig"]["service"]["path"] == kind.path
        (rule,) = webhook["rules"]
        assert rule["apiGroups"] == [kind.info.group]
        assert rule["apiVersions"] == [kind.info.version]
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert rule["scope"] == ("Namespaced" if kind.info.namespaced else "Cluster")
        assert "namespaceSelector" not in webhook
        assert "objectSelector" not in webhook
    assert webhooks["vworkload.fleetq.dev"]["rules"][0]["resources"] == [
        "workloads",
        "workloads/status",
    ]
    assert webhooks["vclusterqueue.fleetq.dev"]["rules"][0]["resources"] == ["clusterqueues"]
    (fleetq_rule,) = webhooks["vmultikueueclusterset.fleetq.dev"]["rules"]
    assert (fleetq_rule["apiGroups"], fleetq_rule["apiVersions"]) == (["fleetq.dev"], ["v1alpha1"])
    kueue_groups = {
        tuple(webhook["rules"][0]["apiGroups"])
        for name, webhook in webhooks.items()
        if name not in ("vjob.fleetq.dev", "vmultikueueclusterset.fleetq.dev")
    }
    assert kueue_groups == {("kueue.x-k8s.io",)}


def test_url_endpoint_and_test_scoping() -> None:
    settings = _settings(
        endpoint=UrlEndpoint.local(9443),
        hub_namespace="kube-system",
        ca_bundle=b"",
        mutating_name="m-test",
        validating_name="v-test",
        job_namespace_selector={
            "matchLabels": {"webhook-test": "yes"},
            "matchExpressions": [{"key": "tier", "operator": "Exists"}],
        },
        kueue_object_selector={"matchLabels": {"webhook-test": "yes"}},
        labels={"owner": "tests"},
        timeout_seconds=5,
    )
    mutating = mutating_configuration(settings)
    assert mutating["metadata"] == {"name": "m-test", "labels": {"owner": "tests"}}
    (job,) = mutating["webhooks"]
    assert job["clientConfig"] == {"url": f"https://127.0.0.1:9443{JOB_MUTATE_PATH}"}
    assert job["timeoutSeconds"] == 5
    assert job["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
            {"key": "tier", "operator": "Exists"},
        ],
        "matchLabels": {"webhook-test": "yes"},
    }
    validating = _by_name(validating_configuration(settings))
    assert validating["vcohort.fleetq.dev"]["objectSelector"] == {
        "matchLabels": {"webhook-test": "yes"}
    }
    assert "objectSelector" not in validating["vjob.fleetq.dev"]


def test_ca_bundle_is_written_only_where_it_differs() -> None:
    configuration = validating_configuration(_settings())
    assert with_ca_bundle(configuration, CA) is None

    rotated = CA.replace(b"MIIB", b"MIIC")
    updated = with_ca_bundle(configuration, rotated)
    assert updated is not None
    encoded = base64.b64encode(rotated).decode()
    assert all(w["clientConfig"]["caBundle"] == encoded for w in updated["webhooks"])
    # The input is left as it was (it may be a cached object).
    assert all(w["clientConfig"]["caBundle"] != encoded for w in configuration["webhooks"])
    assert with_ca_bundle(updated, rotated) is None

    # One stale entry is enough to need a write.
    updated["webhooks"][3]["clientConfig"].pop("caBundle")
    assert with_ca_bundle(updated, rotated) is not None
