"""The Mutating- and ValidatingWebhookConfiguration that send admission calls to the hub.

Two shapes of endpoint: a Service (the chart: the hub runs in the cluster behind
`webhook_service_name`) or a URL (the hub runs outside: dev fleet, tests, where the
apiserver reaches it on `https://127.0.0.1:<port>`). Everything else is the same and
mirrors upstream's registrations: jobs of every enabled kind are defaulted on CREATE and
validated on CREATE and UPDATE, kueue objects validated on CREATE and UPDATE (Workloads'
status too); sideEffects None, failurePolicy Fail, admissionReviewVersions [v1]. Job
webhooks skip the hub's own namespace and kube-system, so the control plane never waits
on the hub. A kind whose webhooks sit in the path of every pod creation
(`WebhooksInManagedNamespacesOnly`: Pods) is further confined to the namespaces the
Configuration's `managedJobsNamespaceSelector` selects, as upstream's chart confines its
Pod webhooks, so a pod anywhere else never waits on the hub. The chart's templates are
generated from the same functions (`core.manager.chartgen`).
Tests narrow both further with selectors, so their webhooks cannot touch other tests.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from core.kube.resources import Resource
from core.manager.webhooks.paths import VALIDATED, job_mutate_path, job_validate_path
from integrations.framework.job_kind import JobResource
from integrations.framework.registry import DEFAULT_FRAMEWORKS
from integrations.registry import REGISTRY

MUTATING_CONFIGURATION_NAME: Final = "fleetq-mutating-webhook-configuration"
VALIDATING_CONFIGURATION_NAME: Final = "fleetq-validating-webhook-configuration"
DEFAULT_TIMEOUT_SECONDS: Final = 10
WEBHOOK_NAME_SUFFIX: Final = "fleetq.dev"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
ADMISSION_REGISTRATION_GROUP: Final = "admissionregistration.k8s.io"

MUTATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    ADMISSION_REGISTRATION_GROUP,
    "v1",
    "mutatingwebhookconfigurations",
    namespaced=False,
    kind="MutatingWebhookConfiguration",
)
VALIDATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    ADMISSION_REGISTRATION_GROUP,
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
    kind="ValidatingWebhookConfiguration",
)


@dataclass(frozen=True, slots=True)
class ServiceEndpoint:
    """The hub's webhook Service inside the cluster."""

    name: str
    namespace: str
    port: int = 443

    def client_config(self, path: str) -> dict[str, Any]:
        service = {"name": self.name, "namespace": self.namespace, "path": path, "port": self.port}
        return {"service": service}


@dataclass(frozen=True, slots=True)
class UrlEndpoint:
    """The hub outside the cluster, reached by URL (`https://host:port`, no trailing /)."""

    base_url: str

    @classmethod
    def local(cls, port: int, host: str = "127.0.0.1") -> UrlEndpoint:
        return cls(f"https://{host}:{port}")

    def client_config(self, path: str) -> dict[str, Any]:
        return {"url": self.base_url.rstrip("/") + path}


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """What varies between installations of the same webhooks."""

    endpoint: ServiceEndpoint | UrlEndpoint
    hub_namespace: str
    ca_bundle: bytes = b""
    """PEM of the CA(s) the apiserver trusts for the endpoint; empty leaves it unset."""
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    mutating_name: str = MUTATING_CONFIGURATION_NAME
    validating_name: str = VALIDATING_CONFIGURATION_NAME
    job_namespace_selector: Mapping[str, Any] | None = None
    """Further namespace terms for the Job webhooks, ANDed with the built-in exclusions."""
    kueue_object_selector: Mapping[str, Any] | None = None
    """An objectSelector for the kueue-object webhooks (None: every object)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels on the two configuration objects."""
    job_resources: tuple[JobResource, ...] = tuple(
        kind.resource for kind in REGISTRY.enabled(DEFAULT_FRAMEWORKS)
    )
    """The enabled job kinds: each gets a defaulting and a validating webhook."""
    managed_namespaces_only: frozenset[JobResource] = frozenset()
    """Job kinds whose webhooks also require `managed_jobs_namespace_selector`."""
    defaulted_on_update: frozenset[JobResource] = frozenset()
    """Job kinds whose defaulting webhook answers updates too (`DefaultsOnUpdate`)."""
    managed_jobs_namespace_selector: Mapping[str, Any] | None = None
    """The Configuration's `managedJobsNamespaceSelector` (None: no further terms)."""


def _webhook(
    settings: WebhookSettings, name: str, path: str, rules: list[dict[str, Any]]
) -> dict[str, Any]:
    client_config = settings.endpoint.client_config(path)
    if settings.ca_bundle:
        client_config["caBundle"] = base64.b64encode(settings.ca_bundle).decode()
    return {
        "name": f"{name}.{WEBHOOK_NAME_SUFFIX}",
        "clientConfig": client_config,
        "rules": rules,
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": settings.timeout_seconds,
    }


def job_namespace_selector(settings: WebhookSettings) -> dict[str, Any]:
    """Not the hub's namespace, not kube-system, and whatever the settings add."""
    excluded = sorted({settings.hub_namespace, "kube-system"})
    extra = settings.job_namespace_selector or {}
    expressions: list[dict[str, Any]] = [
        {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded},
        *(dict(term) for term in extra.get("matchExpressions") or ()),
    ]
    selector: dict[str, Any] = {"matchExpressions": expressions}
    if extra.get("matchLabels"):
        selector["matchLabels"] = dict(extra["matchLabels"])
    return selector


def selector_expressions(selector: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """A label selector as match expressions only (matchLabels as `In [value]`), so two
    selectors AND together by concatenation."""
    if not selector:
        return []
    labels = selector.get("matchLabels") or {}
    return [
        *(
            {"key": key, "operator": "In", "values": [str(value)]}
            for key, value in sorted(labels.items())
        ),
        *(dict(term) for term in selector.get("matchExpressions") or ()),
    ]


def managed_job_namespace_selector(settings: WebhookSettings) -> dict[str, Any]:
    """`job_namespace_selector`, and only where `managedJobsNamespaceSelector` selects."""
    selector = job_namespace_selector(settings)
    selector["matchExpressions"] += selector_expressions(settings.managed_jobs_namespace_selector)
    return selector


def job_rule(resource: JobResource, operations: list[str]) -> dict[str, Any]:
    """The rule sending a job kind's writes to its webhook."""
    return {
        "apiGroups": [resource.group],
        "apiVersions": [resource.version],
        "operations": operations,
        "resources": [resource.plural],
        "scope": "Namespaced",
    }


def _job_webhook(
    settings: WebhookSettings, resource: JobResource, *, mutating: bool
) -> dict[str, Any]:
    prefix, path = (
        ("m", job_mutate_path(resource)) if mutating else ("v", job_validate_path(resource))
    )
    operations = (
        ["CREATE", "UPDATE"]
        if not mutating or resource in settings.defaulted_on_update
        else ["CREATE"]
    )
    name = f"{prefix}{resource.kind.lower()}"
    rule = job_rule(resource, operations)
    webhook = _webhook(settings, name, path, [rule])
    webhook["namespaceSelector"] = (
        managed_job_namespace_selector(settings)
        if resource in settings.managed_namespaces_only
        else job_namespace_selector(settings)
    )
    return webhook


def _metadata(name: str, settings: WebhookSettings) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if settings.labels:
        metadata["labels"] = dict(settings.labels)
    return metadata


def mutating_configuration(settings: WebhookSettings) -> dict[str, Any]:
    """The MutatingWebhookConfiguration: job defaulting on create, per enabled kind."""
    return {
        "apiVersion": f"{ADMISSION_REGISTRATION_GROUP}/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": _metadata(settings.mutating_name, settings),
        "webhooks": [
            _job_webhook(settings, resource, mutating=True) for resource in settings.job_resources
        ],
    }


def validating_configuration(settings: WebhookSettings) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration: every enabled job kind and validated kueue kind."""
    webhooks = [
        _job_webhook(settings, resource, mutating=False) for resource in settings.job_resources
    ]
    for kind in VALIDATED:
        info = kind.info
        rule = {
            "apiGroups": [info.group],
            "apiVersions": [info.version],
            "operations": ["CREATE", "UPDATE"],
            "resources": [info.plural, *(f"{info.plural}/{sub}" for sub in kind.subresources)],
            "scope": info.scope.value,
        }
        webhook = _webhook(settings, f"v{info.singular}", kind.path, [rule])
        if settings.kueue_object_selector is not None:
            webhook["objectSelector"] = dict(settings.kueue_object_selector)
        webhooks.append(webhook)
    return {
        "apiVersion": f"{ADMISSION_REGISTRATION_GROUP}/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": _metadata(settings.validating_name, settings),
        "webhooks": webhooks,
    }
