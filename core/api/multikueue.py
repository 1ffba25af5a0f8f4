"""MultiKueue objects on the manager: worker clusters and the sets of them a queue uses."""

from __future__ import annotations

import enum
from typing import Annotated, ClassVar, Final

import msgspec

from core.api.api_struct import ApiStruct
from core.api.groups import KUEUE_API_VERSION
from core.api.markers import Rule, SchemaMarkers, always, doc
from core.api.meta import Condition, ObjectMeta

MULTIKUEUE_CONTROLLER_NAME: Final = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"
MULTIKUEUE_ORIGIN_UID_ANNOTATION: Final = "kueue.x-k8s.io/multikueue-origin-uid"
KUBECONFIG_SECRET_KEY: Final = "kubeconfig"
MAX_CLUSTERS_PER_CONFIG: Final = 20


class LocationType(enum.StrEnum):
    """Where a worker's kubeconfig is read from."""

    SECRET = "Secret"
    """A Secret in the manager's namespace, under the key "kubeconfig"."""
    PATH = "Path"
    """A file on the manager's disk."""


class QuotaManagementMode(enum.StrEnum):
    """Upstream v0.19's MultiKueueManagerQuotaAutomation (a feature gate, off by default):
    whether the manager's ClusterQueue quotas follow the workers'."""

    MANUAL = "Manual"
    AUTOMATED = "Automated"


class MultiKueueClusterConditionType(enum.StrEnum):
    """Condition types set on a MultiKueueCluster."""

    ACTIVE = "Active"


class KubeConfig(ApiStruct):
    """Where to find the kubeconfig for a worker cluster."""

    location: Annotated[
        str,
        doc(
            "Secret name or file path, depending on locationType.",
            required=True,
            min_length=1,
            max_length=256,
        ),
    ] = always("")
    location_type: Annotated[LocationType, doc("Secret (default) or Path.", defaulted=True)] = (
        LocationType.SECRET
    )


class ClusterProfileReference(ApiStruct):
    """Names a ClusterProfile (multicluster inventory API) that describes the worker."""

    name: Annotated[
        str, doc("Name of the ClusterProfile.", required=True, min_length=1, max_length=256)
    ] = ""


class ClusterSource(ApiStruct):
    """How to connect to a worker: exactly one of kubeConfig and clusterProfileRef."""

    schema_markers: ClassVar[SchemaMarkers] = {
        "rules": (
            Rule(
                "has(self.kubeConfig) != has(self.clusterProfileRef)",
                "exactly one of kubeConfig and clusterProfileRef must be set",
            ),
        )
    }

    kube_config: Annotated[
        KubeConfig | None, doc("Connect with a kubeconfig from a Secret or a file.")
    ] = None
    cluster_profile_ref: Annotated[
        ClusterProfileReference | None, doc("Connect through a ClusterProfile.")
    ] = None


class MultiKueueClusterSpec(ApiStruct):
    """How the manager reaches a worker cluster."""

    cluster_source: Annotated[
        ClusterSource, doc("Connection details of the worker.", required=True)
    ] = msgspec.field(default_factory=ClusterSource)


class MultiKueueClusterStatus(ApiStruct):
    """Observed state of a worker connection."""

    conditions: Annotated[
        list[Condition],
        doc(
            "Latest observations, such as Active (connected).",
            max_items=16,
            list_type="map",
            list_map_keys=("type",),
        ),
    ] = []


class MultiKueueCluster(ApiStruct):
    """A worker cluster the manager can dispatch workloads to."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always("MultiKueueCluster")
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[MultiKueueClusterSpec, doc("Connection details.")] = msgspec.field(
        default_factory=MultiKueueClusterSpec
    )
    status: Annotated[MultiKueueClusterStatus, doc("Observed state.")] = msgspec.field(
        default_factory=MultiKueueClusterStatus
    )


class MultiKueueConfigSpec(ApiStruct):
    """The worker clusters a MultiKueue admission check dispatches to."""

    clusters: Annotated[
        list[str],
        doc(
            "Names of MultiKueueClusters, in order of preference; each at most once.",
            required=True,
            min_items=1,
            max_items=MAX_CLUSTERS_PER_CONFIG,
            item_max_length=256,
            list_type="set",
        ),
    ] = []
    quota_management: Annotated[
        QuotaManagementMode | None,
        doc(
            "Manual (the default) or Automated: with the MultiKueueManagerQuotaAutomation "
            "feature gate on, the nominal quotas of manager ClusterQueues using this config "
            "become the sum of their workers' ClusterQueues' quotas."
        ),
    ] = None


MULTIKUEUE_CONFIG_KIND: Final = "MultiKueueConfig"


class MultiKueueConfig(ApiStruct):
    """A named set of worker clusters, referenced from a MultiKueue AdmissionCheck."""

    api_version: str = always(KUEUE_API_VERSION)
    kind: str = always(MULTIKUEUE_CONFIG_KIND)
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: Annotated[MultiKueueConfigSpec, doc("Worker clusters.")] = msgspec.field(
        default_factory=MultiKueueConfigSpec
    )
