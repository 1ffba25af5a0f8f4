"""fleetq's CRDs (both charts') on a fleet cluster, created if missing and Established."""

from __future__ import annotations

from pathlib import Path

import yaml

from core.api.json_types import JsonDict
from devfleet.cluster_access import ClusterAccess
from devfleet.polling import until

REPO = Path(__file__).resolve().parents[1]
CRD_FOLDERS = (REPO / "charts" / "fleetq-hub" / "crds", REPO / "charts" / "fleetq-worker" / "crds")


def install_crds(member: ClusterAccess, timeout: float = 60.0) -> None:
    """Create the charts' CRDs that are missing and wait until all are Established."""
    from kubernetes import client

    manifests: dict[str, JsonDict] = {}
    for folder in CRD_FOLDERS:
        for path in sorted(folder.glob("*.yaml")):
            manifest = yaml.safe_load(path.read_text())
            manifests[manifest["metadata"]["name"]] = manifest
    with member.api_client() as api_client:
        api = client.ApiextensionsV1Api(api_client)
        for manifest in manifests.values():
            try:
                api.create_custom_resource_definition(manifest)
            except client.ApiException as error:
                if error.status != 409:
                    raise
        for name in manifests:

            def established(crd: str = name) -> bool:
                conditions = api.read_custom_resource_definition(crd).status.conditions or []
                return any(c.type == "Established" and c.status == "True" for c in conditions)

            until(established, f"CRD {name} established on {member.name}", timeout)
