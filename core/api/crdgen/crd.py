"""CustomResourceDefinition documents for the kinds in the registry."""

from __future__ import annotations

from typing import Any

from core.api.conversion.versions import (
    CONVERSION_SERVICE_NAME,
    CONVERSION_SERVICE_NAMESPACE,
    CONVERSION_SERVICE_PORT,
    CONVERT_PATH,
    DEPRECATION_WARNING,
    V1BETA1,
    WEBHOOK_CONVERTED_KINDS,
)
from core.api.crdgen.schema import Schema, root_schema
from core.api.crdgen.v1beta1 import v1beta1_column_path, v1beta1_schema
from core.api.groups import KUEUE_GROUP
from core.api.registry import KindInfo


def _columns(info: KindInfo, version: str) -> list[dict[str, Any]]:
    return [
        {
            "name": column.name,
            "jsonPath": (
                v1beta1_column_path(info.kind, column.json_path)
                if version == V1BETA1
                else column.json_path
            ),
            "type": column.type,
            "description": column.description,
            **({"priority": column.priority} if column.priority else {}),
        }
        for column in info.printer_columns
    ]


def _version(info: KindInfo, name: str, schema: Schema, *, storage: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
    }
    if not storage:
        version["deprecated"] = True
        version["deprecationWarning"] = DEPRECATION_WARNING
    if info.status_subresource:
        version["subresources"] = {"status": {}}
    if info.printer_columns:
        version["additionalPrinterColumns"] = _columns(info, name)
    return version


def conversion_webhook() -> dict[str, Any]:
    """`spec.conversion` of a CRD whose versions the hub's `/convert` endpoint converts:
    the chart owns all of it but the `caBundle`, which the hub injects in cluster
    (`core.manager.webhooks.crd_conversion`; docs/crds.md says why)."""
    return {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "namespace": CONVERSION_SERVICE_NAMESPACE,
                    "name": CONVERSION_SERVICE_NAME,
                    "path": CONVERT_PATH,
                    "port": CONVERSION_SERVICE_PORT,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }


def serves_v1beta1(info: KindInfo) -> bool:
    return info.group == KUEUE_GROUP


def crd_document(info: KindInfo) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CRD that serves `info`'s kind; kueue kinds also in
    v1beta1 (served, not stored). Where no hub runs (a worker cluster), v1beta1 requests
    for a webhook-converted kind fail with the apiserver's "conversion webhook" error;
    v1beta2 never needs the webhook."""
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": info.list_kind,
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    schema = root_schema(info.type)
    versions = [_version(info, info.version, schema, storage=True)]
    spec: dict[str, Any] = {
        "group": info.group,
        "names": names,
        "scope": str(info.scope),
    }
    if serves_v1beta1(info):
        versions.insert(
            0, _version(info, V1BETA1, v1beta1_schema(info.kind, schema), storage=False)
        )
        if info.kind in WEBHOOK_CONVERTED_KINDS:
            spec["conversion"] = conversion_webhook()
    spec["versions"] = versions
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            "labels": {"app.kubernetes.io/part-of": "fleetq"},
        },
        "spec": spec,
    }
