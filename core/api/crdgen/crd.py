"""CustomResourceDefinition documents for the kinds in the registry."""

from __future__ import annotations

from typing import Any

from core.api.crdgen.schema import root_schema
from core.api.registry import KindInfo


def crd_document(info: KindInfo) -> dict[str, Any]:
    """The apiextensions.k8s.io/v1 CRD that serves `info`'s kind."""
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
    version: dict[str, Any] = {
        "name": info.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root_schema(info.type)},
    }
    if info.status_subresource:
        version["subresources"] = {"status": {}}
    if info.printer_columns:
        version["additionalPrinterColumns"] = [
            {
                "name": column.name,
                "jsonPath": column.json_path,
                "type": column.type,
                "description": column.description,
                **({"priority": column.priority} if column.priority else {}),
            }
            for column in info.printer_columns
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            "labels": {"app.kubernetes.io/part-of": "fleetq"},
        },
        "spec": {
            "group": info.group,
            "names": names,
            "scope": str(info.scope),
            "versions": [version],
        },
    }
