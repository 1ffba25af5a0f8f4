"""Which kueue kinds are served in v1beta1, and which need the conversion webhook.

Every kueue kind fleetq serves is served in v1beta1 too (as upstream v0.19.2 does, not
stored). Kinds whose v1beta1 schema equals v1beta2's convert by the apiserver relabelling
`apiVersion` (strategy None), so they keep working with no hub running (worker
clusters, a hub being upgraded); the others go through the hub's `/convert` endpoint.
"""

from __future__ import annotations

from typing import Final

from core.api.groups import KUEUE_GROUP, KUEUE_VERSION

V1BETA1: Final = "v1beta1"
V1BETA2: Final = KUEUE_VERSION
V1BETA1_API_VERSION: Final = f"{KUEUE_GROUP}/{V1BETA1}"
V1BETA2_API_VERSION: Final = f"{KUEUE_GROUP}/{V1BETA2}"

WEBHOOK_CONVERTED_KINDS: Final = frozenset(
    {
        "AdmissionCheck",
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "MultiKueueCluster",
        "MultiKueueConfig",
        "Workload",
    }
)
"""Kinds with fields that differ between v1beta1 and v1beta2."""

DEPRECATION_WARNING: Final = "This version is deprecated. Use v1beta2 instead."
CONVERT_PATH: Final = "/convert"

CONVERSION_SERVICE_NAMESPACE: Final = "kueue-system"
CONVERSION_SERVICE_NAME: Final = "kueue-webhook-service"
CONVERSION_SERVICE_PORT: Final = 443
"""The Service the charts' CRDs send conversions to (upstream's names): `crds/` cannot be
templated, so the hub chart's webhook Service has this fixed name, and a hub in cluster
converts only when it runs behind it (in `kueue-system`)."""
