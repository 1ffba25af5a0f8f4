"""fleetq's CRDs (both charts') on a fleet cluster, created or brought up to date, Established.

A CRD that differs from the committed one (a fleet kept from before a schema change) is
replaced, keeping the conversion webhook's clientConfig a running hub pointed at itself.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from core.api.json_types import JsonDict
from devfleet.cluster_access import ClusterAccess
from devfleet.polling import until

REPO = Path(__file__).resolve().parents[1]
CRD_FOLDERS = (REPO / "charts" / "fleetq-hub" / "crds", REPO / "charts" / "fleetq-worker" / "crds")


def install_crds(member: ClusterAccess, timeout: float = 60.0) -> None:
    """Create the charts' CRDs that are missing, update those that differ, and wait until
    all are Established."""
    from kubernetes import client

    manifests: dict[str, JsonDict] = {}
    for folder in CRD_FOLDERS:
        for path in sorted(folder.glob("*.yaml")):
            manifest = yaml.safe_load(path.read_text())
            manifests[manifest["metadata"]["name"]] = manifest
    with member.api_client() as api_client:
        api = client.ApiextensionsV1Api(api_client)
        for name, manifest in manifests.items():
            try:
                api.create_custom_resource_definition(manifest)
            except client.ApiException as error:
                if error.status != 409:
                    raise
                _update(api, name, manifest)
        for name in manifests:

            def established(crd: str = name) -> bool:
                conditions = api.read_custom_resource_definition(crd).status.conditions or []
                return any(c.type == "Established" and c.status == "True" for c in conditions)

            until(established, f"CRD {name} established on {member.name}", timeout)


def _update(api: Any, name: str, manifest: JsonDict) -> None:
    """Replace CRD `name` when its spec is not the committed one (conversion client kept)."""
    current = api.api_client.sanitize_for_serialization(api.read_custom_resource_definition(name))
    wanted = keeping_conversion_client(current, manifest)
    if _comparable(current["spec"]) == _comparable(wanted["spec"]):
        return
    wanted["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    api.replace_custom_resource_definition(name, wanted)


def keeping_conversion_client(current: JsonDict, manifest: JsonDict) -> JsonDict:
    """`manifest` with the conversion webhook's clientConfig of `current` (the CRD on the
    cluster), where a hub has pointed it at itself: writing the committed Service over a
    hub's URL would leave both, which the apiserver refuses, or take the hub's webhook away."""
    kept = (((current.get("spec") or {}).get("conversion") or {}).get("webhook") or {}).get(
        "clientConfig"
    )
    wanted = copy.deepcopy(manifest)
    wanted_webhook = ((wanted.get("spec") or {}).get("conversion") or {}).get("webhook")
    if kept and wanted_webhook is not None:
        wanted_webhook["clientConfig"] = kept
    return wanted


def _comparable(spec: JsonDict) -> JsonDict:
    """The spec without what the apiserver fills in (conversion None, preserveUnknownFields)."""
    spec = {key: value for key, value in spec.items() if value is not None}
    spec.pop("preserveUnknownFields", None)
    if spec.get("conversion") == {"strategy": "None"}:
        del spec["conversion"]
    return spec
