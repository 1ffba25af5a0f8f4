"""The hub chart's webhook objects: the same registrations the hub builds for itself
(`core.manager.webhooks.configurations`), behind the chart's Service, in each certificate mode."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from core.manager.webhooks.configurations import (
    ServiceEndpoint,
    WebhookSettings,
    mutating_configuration,
    validating_configuration,
)
from core.manager.webhooks.paths import VALIDATED
from integrations.registry import REGISTRY

NAMESPACE = "fleetq-system"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def _settings(rendered: Any, **overrides: Any) -> WebhookSettings:
    """What the hub would register, with the job kinds the chart's own values enable."""
    service = rendered.one("Service", "fq-fleetq-hub-webhook-service")
    frameworks = ("batch/job",)  # the chart's default values
    return WebhookSettings(
        endpoint=ServiceEndpoint(
            service["metadata"]["name"], NAMESPACE, service["spec"]["ports"][0]["port"]
        ),
        hub_namespace=NAMESPACE,
        job_resources=tuple(kind.resource for kind in REGISTRY.enabled(frameworks)),
        **overrides,
    )


@pytest.mark.parametrize(
    "selectors",
    [
        {},
        {
            "namespaceSelector": {
                "matchLabels": {"team": "ml"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}],
            },
            "objectSelector": {"matchLabels": {"fleetq.dev/validated": "yes"}},
        },
    ],
    ids=["default", "narrowed by selectors"],
)
def test_the_chart_registers_exactly_what_the_hub_would(
    render_hub: Any, selectors: dict[str, Any]
) -> None:
    rendered = render_hub({"webhook": {"timeoutSeconds": 7, **selectors}})
    settings = _settings(
        rendered,
        timeout_seconds=7,
        job_namespace_selector=selectors.get("namespaceSelector"),
        kueue_object_selector=selectors.get("objectSelector"),
    )
    mutating = rendered.one("MutatingWebhookConfiguration")
    validating = rendered.one("ValidatingWebhookConfiguration")
    assert mutating["metadata"]["name"] == settings.mutating_name
    assert validating["metadata"]["name"] == settings.validating_name
    assert mutating["webhooks"] == mutating_configuration(settings)["webhooks"]
    assert validating["webhooks"] == validating_configuration(settings)["webhooks"]


def test_webhook_names_follow_the_fleetq_dev_convention(render_hub: Any) -> None:
    rendered = render_hub()
    mutating = [w["name"] for w in rendered.one("MutatingWebhookConfiguration")["webhooks"]]
    validating = [w["name"] for w in rendered.one("ValidatingWebhookConfiguration")["webhooks"]]
    assert mutating == ["mjob.fleetq.dev"]
    assert validating == [
        "vjob.fleetq.dev",
        *(f"v{kind.info.singular}.fleetq.dev" for kind in VALIDATED),
    ]


def test_jobs_in_the_hubs_own_namespace_never_wait_for_the_hub(render_hub: Any) -> None:
    rendered = render_hub(namespace="kube-system")
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        job_hook = rendered.one(kind)["webhooks"][0]
        excluded = job_hook["namespaceSelector"]["matchExpressions"][0]
        assert excluded["operator"] == "NotIn"
        assert excluded["values"] == ["kube-system"]


def test_internal_certificates_leave_the_ca_bundle_to_the_hub_and_the_dir_writable(
    render_hub: Any,
) -> None:
    rendered = render_hub()
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configuration = rendered.one(kind)
        assert "annotations" not in configuration["metadata"]
        assert all("caBundle" not in w["clientConfig"] for w in configuration["webhooks"])
    volumes = rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "webhook-certs")["emptyDir"]
    mount = next(m for m in rendered.container()["volumeMounts"] if m["name"] == "webhook-certs")
    assert not mount.get("readOnly")
    assert not rendered.of_kind("Certificate")


def test_cert_manager_issues_into_the_mounted_secret_and_injects_the_ca(render_hub: Any) -> None:
    rendered = render_hub({"webhook": {"certificates": {"mode": "certManager"}}})
    certificate = rendered.one("Certificate")
    issuer = rendered.one("Issuer")
    assert certificate["spec"]["issuerRef"] == {
        "name": issuer["metadata"]["name"],
        "kind": "Issuer",
    }
    assert issuer["spec"] == {"selfSigned": {}}
    service = rendered.one("Service", "fq-fleetq-hub-webhook-service")["metadata"]["name"]
    assert f"{service}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    expected = f"{NAMESPACE}/{certificate['metadata']['name']}"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = rendered.one(kind)["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": expected}
    volumes = rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    secret_volume = next(v for v in volumes if v["name"] == "webhook-certs")["secret"]
    assert secret_volume["secretName"] == certificate["spec"]["secretName"]
    assert {item["path"] for item in secret_volume["items"]} == {"tls.crt", "tls.key"}


def test_cert_manager_with_your_own_issuer_creates_none(render_hub: Any) -> None:
    issuer_ref = {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    rendered = render_hub(
        {
            "webhook": {
                "certificates": {"mode": "certManager", "certManager": {"issuerRef": issuer_ref}}
            }
        }
    )
    assert rendered.one("Certificate")["spec"]["issuerRef"] == issuer_ref
    assert not rendered.of_kind("Issuer")


def test_a_provided_secret_and_ca_bundle_are_used_as_given(render_hub: Any) -> None:
    values = {
        "webhook": {"certificates": {"mode": "secret", "secretName": "my-tls", "caBundle": CA_PEM}}
    }
    rendered = render_hub(values)
    encoded = base64.b64encode(CA_PEM.encode()).decode()
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        hooks = rendered.one(kind)["webhooks"]
        assert {w["clientConfig"]["caBundle"] for w in hooks} == {encoded}
    volumes = rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "webhook-certs")["secret"]["secretName"] == (
        "my-tls"
    )


@pytest.mark.parametrize(
    ("certificates", "message"),
    [
        ({"mode": "vault"}, "is not one of internal, certManager, secret"),
        ({"mode": "secret", "secretName": "my-tls"}, "caBundle: mode secret needs"),
        ({"mode": "secret", "caBundle": CA_PEM}, "secretName: mode secret needs"),
    ],
)
def test_incomplete_certificate_settings_fail_with_what_to_set(
    render_hub: Any, render_error: type[Exception], certificates: dict[str, Any], message: str
) -> None:
    with pytest.raises(render_error, match=message):
        render_hub({"webhook": {"certificates": certificates}})


def test_without_webhooks_nothing_calls_the_hub_and_it_serves_none(render_hub: Any) -> None:
    rendered = render_hub({"webhook": {"enabled": False}})
    assert not rendered.of_kind("MutatingWebhookConfiguration")
    assert not rendered.of_kind("ValidatingWebhookConfiguration")
    assert not [s for s in rendered.of_kind("Service") if "webhook" in s["metadata"]["name"]]
    container = rendered.container()
    assert "--no-webhooks" in container["args"]
    assert "webhook" not in {p["name"] for p in container["ports"]}
